package config_test

import (
	"strings"
	"testing"

	"personnel/config"
)

func TestResources_TheShippedListIsValid(t *testing.T) {
	rs, err := config.Resources()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].TypeName() != "Department" || rs[1].Limits != (config.ResourceLimits{Code: 50, Name: 100}) {
		t.Fatalf("resources %+v", rs)
	}
}

func TestParseResources_BadEntriesNameTheEntry(t *testing.T) {
	entry := func(name, path, table, code, nameF, parent string) string {
		return "  - name: " + name + "\n    path: " + path + "\n    table: " + table +
			"\n    fields:\n      code: " + code + "\n      name: " + nameF + "\n      parent: " + parent + "\n"
	}
	good := entry("position", "positions", "personnel_position", "position_code", "position_name", "parent_position")
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"missing field name", "resources:\n" + entry("position", "positions", "personnel_position", `""`, "n", "p"), `resource 1 ("position"): fields.code: missing`},
		{"duplicate path", "resources:\n" + good + entry("role", "positions", "personnel_role", "c", "n", "p"), `resource 2 ("role"): path "positions" is already used by resource 1`},
		{"field not an identifier", "resources:\n" + entry("position", "positions", "personnel_position", "position-code", "n", "p"), `fields.code: "position-code" is not a valid identifier`},
		{"two resources on one table", "resources:\n" + good + entry("role", "roles", "personnel_position", "c", "n", "p"), `resource 2 ("role"): table "personnel_position" is already used by resource 1`},
		{"duplicate name", "resources:\n" + good + entry("position", "roles", "personnel_role", "c", "n", "p"), `name "position" is already used`},
		{"name with capitals", "resources:\n" + entry("Position", "positions", "t", "c", "n", "p"), `name: "Position" is not`},
		{"field is a list parameter", "resources:\n" + entry("position", "positions", "t", "page", "n", "p"), `fields.code: "page" is reserved`},
		{"derived names collide", "resources:\n" + entry("position", "positions", "t", "x", "x_fold", "p"), `fields.code and fields.name both give the name "x_fold"`},
		{"limit too large", "resources:\n" + good + "    limits:\n      name: 500\n", `limits.name: 500 is outside`},
		{"unknown key", "resources:\n" + good + "    colour: red\n", `field colour not found`},
		{"empty", "resources: []\n", "no resources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseResources([]byte(tc.yaml), "resources.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
