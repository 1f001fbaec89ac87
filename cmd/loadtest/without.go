package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// mechanism is a performance mechanism the service can be started
// without, and the scenarios it is for: where it should win, and, for
// those that cost something on every write or every request, where its
// cost shows.
type mechanism struct {
	name string
	// off is the environment that turns it off.
	off []string
	// scenarios are matched by prefix (deep_page_ names its page).
	scenarios []string
	// backends, when set, are the only backends the mechanism exists on.
	backends []string
}

// mechanisms are those PERSONNEL_WITHOUT turns off, and the request log's
// holding of lines (PERSONNEL_LOG_HOLD=0s), in the order they are run.
var mechanisms = []mechanism{
	{name: "id_blocks", off: []string{"PERSONNEL_WITHOUT=id_blocks"}, scenarios: []string{"deep_page_"}},
	{name: "stored_count", off: []string{"PERSONNEL_WITHOUT=stored_count"}, scenarios: []string{"list_page1", "list_page_size_100"}},
	{name: "count_cache", off: []string{"PERSONNEL_WITHOUT=count_cache"},
		scenarios: []string{"icontains_selective", "icontains_broad", "icontains_short", "icontains_broad_1_in_20_updates"}},
	{name: "planner", off: []string{"PERSONNEL_WITHOUT=planner"},
		scenarios: []string{"icontains_selective", "icontains_broad", "icontains_short", "icontains_broad_1_in_20_updates"}},
	{name: "group_commit", off: []string{"PERSONNEL_WITHOUT=group_commit"}, scenarios: []string{"create", "update"}, backends: []string{"sqlite"}},
	{name: "mysql_prepared", off: []string{"PERSONNEL_WITHOUT=mysql_prepared"},
		scenarios: []string{"read", "list_page1", "icontains_selective", "ordering_name_desc"}, backends: []string{"mysql"}},
	{name: "write_pipeline", off: []string{"PERSONNEL_WITHOUT=write_pipeline"}, scenarios: []string{"create", "update"},
		backends: []string{"mysql", "postgres"}},
	{name: "log_hold", off: []string{"PERSONNEL_LOG_HOLD=0s"}, scenarios: []string{"read"}},
}

func mechanismNames() []string {
	var names []string
	for _, m := range mechanisms {
		names = append(names, m.name)
	}
	return names
}

// checkMechanisms checks a -without list.
func checkMechanisms(list string) error {
	for _, name := range splitList(list) {
		if !slices.Contains(mechanismNames(), name) {
			return fmt.Errorf("%q is not one of %s", name, strings.Join(mechanismNames(), ", "))
		}
	}
	return nil
}

func splitList(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// measureMechanisms measures each mechanism named in list on the database
// env names (seeded already): a service with it and one without it, both
// started afresh over that database, driven in alternation (alternateAll)
// on each of its scenarios (those of only, if given). It prints both rows
// of each, the second with the ratio of the first's throughput to it. The
// hand-written services hws (started in modes), if any, are driven in the
// same alternation on the scenarios they serve.
func measureMechanisms(bin, dir, backend string, env []string, n, conns int, d time.Duration, only, list string, hws []*server, modes []string) error {
	for _, name := range splitList(list) {
		i := slices.IndexFunc(mechanisms, func(m mechanism) bool { return m.name == name })
		m := mechanisms[i]
		if len(m.backends) > 0 && !slices.Contains(m.backends, backend) {
			fmt.Fprintf(os.Stderr, "%s: %s exists on %s only\n", backend, m.name, strings.Join(m.backends, " and "))
			continue
		}
		if err := measureMechanism(bin, dir, backend, env, m, n, conns, d, only, hws, modes); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return nil
}

func measureMechanism(bin, dir, backend string, env []string, m mechanism, n, conns int, d time.Duration, only string, hws []*server, modes []string) error {
	base := slices.Clone(env)
	with, err := start(bin, dir, "with-"+m.name, base)
	if err != nil {
		return err
	}
	defer stop(with)
	without, err := start(bin, dir, "without-"+m.name, append(slices.Clone(base), m.off...))
	if err != nil {
		return err
	}
	defer stop(without)
	root, size, err := with.bigRoot()
	if err != nil {
		return err
	}
	for _, sc := range scenarios(n, root, size) {
		if !slices.ContainsFunc(m.scenarios, func(p string) bool { return strings.HasPrefix(sc.name, p) }) ||
			only != "" && !slices.Contains(strings.Split(only, ","), sc.name) {
			continue
		}
		svcs, names := []*server{with, without}, []string{"with", "without " + m.name}
		if handwrittenServes(sc.name) {
			for i, hw := range hws {
				if err := sameAnswer(with, hw, sc); err != nil {
					return fmt.Errorf("%s: %w", sc.name, err)
				}
				svcs, names = append(svcs, hw), append(names, "hand-written "+modes[i])
			}
		}
		alternateAll(svcs, names, sc, backend, n, conns, d)
	}
	return nil
}

// stop stops a service started by start and waits for it.
func stop(s *server) {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}
