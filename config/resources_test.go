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
	if len(rs) == 0 {
		t.Fatal("no resources")
	}
	for _, r := range rs {
		if r.Limits.Code < 1 || r.Limits.Name < 1 {
			t.Errorf("%s: limits not filled in: %+v", r.Name, r.Limits)
		}
	}
}

func TestParseResources_ExtraFieldsAndFlatResources(t *testing.T) {
	rs, err := config.ParseResources([]byte(`resources:
  - name: leave_type
    path: leave-types
    table: personnel_leave_type
    fields: {code: leave_code, name: leave_name}
    extra:
      - {name: paid, type: boolean, default: true, filters: [exact]}
      - {name: note, type: string, filters: [icontains], ordering: true}
`), "resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.Hierarchical() || len(r.Extra) != 2 || *r.Extra[0].Default != "true" || r.Extra[1].MaxLength != config.MaxSortableLength || !r.Extra[1].Folded() {
		t.Fatalf("parsed %+v", r)
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
		{"field named like an error key", "resources:\n" + entry("position", "positions", "t", "detail", "n", "p"), `fields.code: "detail" is reserved`},
		{"extra of an unknown type", "resources:\n" + good + "    extra:\n      - {name: level, type: float}\n", `extra "level": type "float" is not one of`},
		{"extra filter its type lacks", "resources:\n" + good + "    extra:\n      - {name: level, type: integer, filters: [icontains]}\n", `filters: "icontains" is not a filter of a integer`},
		{"extra default of the wrong type", "resources:\n" + good + "    extra:\n      - {name: active, type: boolean, default: maybe}\n", `default "maybe": not "true" or "false"`},
		{"extra default outside the bounds", "resources:\n" + good + "    extra:\n      - {name: level, type: integer, min: 0, max: 9, default: 10}\n", `default "10": above max 9`},
		{"extra choice without choices", "resources:\n" + good + "    extra:\n      - {name: grade, type: choice}\n", `choices: a choice field needs at least one`},
		{"extra isnull on a required field", "resources:\n" + good + "    extra:\n      - {name: grade, type: choice, choices: [a], required: true, filters: [isnull]}\n", `isnull applies to optional fields only`},
		{"extra sorted string too long", "resources:\n" + good + "    extra:\n      - {name: note, type: string, max_length: 500, ordering: true}\n", `a string may sort only with a max_length of at most 190`},
		{"extra clashing with a filter", "resources:\n" + good + "    extra:\n      - {name: position_name_icontains, type: string}\n", `both give the name "position_name_icontains"`},
		{"extra named like the code", "resources:\n" + good + "    extra:\n      - {name: position_code, type: string}\n", `both give the name "position_code"`},
		{"extra named id", "resources:\n" + good + "    extra:\n      - {name: id, type: integer}\n", `extra "id": name: "id" is reserved`},
		{"path of the API reference page", "resources:\n" + entry("doc", "docs", "t", "c", "n", "p"), `path: "docs" is reserved`},
		{"path of whoami", "resources:\n" + entry("who", "whoami", "t", "c", "n", "p"), `path: "whoami" is reserved`},
		{"extra named like the children count", "resources:\n" + good + "    extra:\n      - {name: children_count, type: integer}\n", `extra "children_count": name: "children_count" is reserved`},
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
