package config_test

import (
	"strings"
	"testing"

	"personnel/config"
)

// PERSONNEL_WITHOUT turns off the mechanisms it names, and refuses a name
// it does not know, naming those it does.
func TestWithout_TurnsOffTheNamedMechanisms(t *testing.T) {
	c, err := config.Load("", env(nil))
	if err != nil || c.Without != (config.Mechanisms{}) {
		t.Fatalf("by default: %+v, %v", c.Without, err)
	}
	c, err = config.Load("", env(map[string]string{"PERSONNEL_WITHOUT": " planner,id_blocks ,"}))
	if err != nil || c.Without != (config.Mechanisms{Planner: true, IDBlocks: true}) {
		t.Fatalf("planner and id_blocks: %+v, %v", c.Without, err)
	}
	all := strings.Join(config.MechanismNames, ",")
	c, err = config.Load("", env(map[string]string{"PERSONNEL_WITHOUT": all}))
	want := config.Mechanisms{IDBlocks: true, StoredCount: true, CountCache: true, Planner: true, GroupCommit: true, MySQLPrepared: true, WritePipeline: true}
	if err != nil || c.Without != want {
		t.Fatalf("%s: %+v, %v", all, c.Without, err)
	}
	_, err = config.Load("", env(map[string]string{"PERSONNEL_WITHOUT": "planner,cache"}))
	if err == nil || !strings.Contains(err.Error(), `"cache" is not one of id_blocks,`) {
		t.Errorf("an unknown name: %v", err)
	}
}
