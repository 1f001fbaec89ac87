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
		{"extra default date of year 0", "resources:\n" + good + "    extra:\n      - {name: since, type: date, default: \"0000-01-01\"}\n", `default "0000-01-01": before year 1`},
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

// refsList is a valid list with references: employees refer to a
// department, a manager (another employee) and areas.
const refsList = `resources:
  - name: department
    path: departments
    table: personnel_department
    fields: {code: dept_code, name: dept_name, parent: parent_dept}
  - name: area
    path: areas
    table: personnel_area
    fields: {code: area_code, name: area_name}
  - name: employee
    path: employees
    table: personnel_employee
    fields: {code: emp_code, name: first_name}
    extra:
      - name: department
        type: ref
        to: department
        required: true
        filters: [exact, in, isnull, under]
      - name: manager
        type: ref
        to: employee
        on_delete: set_null
      - name: area
        type: refs
        to: area
        filters: [exact, in]
`

func TestParseResources_ReferencesGetTheirDefaultRules(t *testing.T) {
	rs, err := config.ParseResources([]byte(refsList), "resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := rs[2].Extra
	if e[0].OnDelete != config.OnDeleteProtect || e[1].OnDelete != config.OnDeleteSetNull || e[2].OnDelete != config.OnDeleteRemove {
		t.Fatalf("rules %q, %q, %q", e[0].OnDelete, e[1].OnDelete, e[2].OnDelete)
	}
	if !e[0].Indexed() || e[2].Indexed() || rs[2].RefsTable(e[2]) != "personnel_employee_area" {
		t.Fatalf("parsed %+v", e)
	}
}

// Each bad reference is refused with the line of its field, the entry and
// what is wrong.
func TestParseResources_BadReferencesNameTheLine(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(refsList, old) {
			t.Fatalf("%q is not in the list", old)
		}
		return strings.Replace(refsList, old, new, 1)
	}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a target that is not declared", replace("to: department", "to: dept"),
			`resources.yaml:15: resource 3 ("employee"): extra "department": to: no resource is named "dept" (the list has department, area, employee)`},
		{"set_null on a required field", replace("        required: true\n", "        required: true\n        on_delete: set_null\n"),
			`resources.yaml:15: resource 3 ("employee"): extra "department": on_delete: set_null would clear a required field`},
		{"a required reference to its own resource", replace("on_delete: set_null", "required: true\n        on_delete: protect"),
			`resources.yaml:20: resource 3 ("employee"): extra "manager": required: a required reference to its own resource leaves the first record nothing to refer to`},
		{"a cascade to itself", replace("on_delete: set_null", "on_delete: cascade"),
			`resources.yaml:20: resource 3 ("employee"): extra "manager": on_delete: cascade closes a cycle of cascades (deleting employee deletes employee)`},
		{"a cycle of cascades", replace("    fields: {code: area_code, name: area_name}\n",
			"    fields: {code: area_code, name: area_name}\n    extra:\n      - {name: owner, type: ref, to: employee, on_delete: cascade}\n") +
			"      - {name: base, type: ref, to: area, on_delete: cascade}\n",
			`resource 3 ("employee"): extra "base": on_delete: cascade closes a cycle of cascades (deleting area deletes employee deletes area)`},
		{"under a flat resource", replace("to: area\n        filters: [exact, in]", "to: area\n        filters: [exact, under]"),
			`extra "area": filters: under needs a hierarchy, and "area" has no parent field`},
		{"a cascade of a list", replace("to: area\n", "to: area\n        on_delete: cascade\n"),
			`extra "area": on_delete: "cascade" does not apply to refs`},
		{"an unknown rule", replace("on_delete: set_null", "on_delete: restrict"),
			`extra "manager": on_delete: "restrict" is not protect, set_null or cascade`},
		{"a ref without a target", replace("        to: department\n", ""),
			`extra "department": to: missing`},
		{"a target on another type", replace("      - name: manager\n", "      - name: nickname\n        type: string\n        to: employee\n      - name: manager\n"),
			`extra "nickname": to and on_delete apply to ref and refs fields only`},
		{"a default of a reference", replace("on_delete: set_null", "on_delete: set_null\n        default: \"3\""),
			`extra "manager": default "3": a reference has no default`},
		{"ordering by a list", replace("filters: [exact, in]\n", "filters: [exact, in]\n        ordering: true\n"),
			`extra "area": ordering: a list cannot order by a refs field`},
		{"a list named like its resource", replace("      - name: area\n        type: refs", "      - name: employee\n        type: refs"),
			`extra "employee": name: a refs field may not be named like its resource`},
		{"a list whose table is taken", replace("table: personnel_area\n", "table: personnel_employee_area\n"),
			`extra "area": its table personnel_employee_area is already the table of resource "area"`},
		{"a filter a reference lacks", replace("filters: [exact, in, isnull, under]", "filters: [exact, gte]"),
			`filters: "gte" is not a filter of a ref`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseResources([]byte(tc.yaml), "resources.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Errors about an entry itself name the line it begins on.
func TestParseResources_ErrorsNameTheLineOfTheEntry(t *testing.T) {
	_, err := config.ParseResources([]byte(strings.Replace(refsList, "path: areas", "path: departments", 1)), "resources.yaml")
	if err == nil || !strings.Contains(err.Error(), `resources.yaml:6: resource 2 ("area"): path "departments" is already used by resource 1`) {
		t.Fatalf("error %v", err)
	}
}

// The shipped list holds BioTime's three resources, with the field names
// its clients send.
func TestResources_TheShippedListServesBioTimesThreeResources(t *testing.T) {
	rs, err := config.Resources()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]config.ResourceFields{
		"departments": {Code: "dept_code", Name: "dept_name", Parent: "parent_dept"},
		"areas":       {Code: "area_code", Name: "area_name", Parent: "parent_area"},
		"positions":   {Code: "position_code", Name: "position_name", Parent: "parent_position"},
	}
	for _, r := range rs {
		if f, ok := want[r.Path]; ok && f == r.Fields {
			delete(want, r.Path)
		}
	}
	if len(want) > 0 {
		t.Fatalf("the shipped list lacks %v", want)
	}
}
