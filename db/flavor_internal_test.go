package db

import "testing"

func TestMySQLFlavor_ToldFromTheVersionString(t *testing.T) {
	for version, want := range map[string]string{
		"8.0.11-TiDB-v8.5.1":           "tidb",
		"10.11.6-MariaDB-0+deb12u1":    "mariadb",
		"11.4.2-MariaDB":               "mariadb",
		"8.4.3":                        "mysql",
		"8.0.39-0ubuntu0.22.04.1-log":  "mysql",
		"5.7.44-TiDB-v7.5.0-alpha-xyz": "tidb",
	} {
		if got := mysqlFlavor(version); got != want {
			t.Errorf("mysqlFlavor(%q) = %q, want %q", version, got, want)
		}
	}
}

// The collation follows the server detected, whatever flavour is forced:
// MariaDB has utf8mb4_nopad_bin and (before 11.4.5) no utf8mb4_0900_bin;
// TiDB has no utf8mb4_nopad_bin, and its utf8mb4_bin pads with spaces, so
// it gets utf8mb4_0900_bin (NO PAD) as MySQL 8 does.
func TestBinaryCollation_FollowsTheServerNotTheForcedFlavor(t *testing.T) {
	for _, tc := range []struct{ server, flavor, version, want string }{
		{"mariadb", "mariadb", "10.11.6-MariaDB", "utf8mb4_nopad_bin"},
		{"mariadb", "tidb", "10.11.6-MariaDB", "utf8mb4_nopad_bin"},
		{"tidb", "tidb", "8.0.11-TiDB-v8.5.1", "utf8mb4_0900_bin"},
		{"mysql", "mysql", "8.4.3", "utf8mb4_0900_bin"},
		{"mysql", "tidb", "8.4.3", "utf8mb4_0900_bin"},
	} {
		d := &DB{server: tc.server, Flavor: tc.flavor, Version: tc.version}
		if got, err := d.binaryCollation(); err != nil || got != tc.want {
			t.Errorf("%+v: binaryCollation() = %q, %v; want %q", tc, got, err, tc.want)
		}
	}
}

func TestSubstringTable_NamesFitPostgresLimit(t *testing.T) {
	short := SubstringTable("personnel_department", "dept_code_fold")
	if short != "personnel_department_dept_code_fold_substr" {
		t.Errorf("short name %q", short)
	}
	table := "personnel_a_table_with_a_name_as_long_as_some_users_like_them"
	a, b := SubstringTable(table, "first_long_field_name_fold"), SubstringTable(table, "first_long_field_name_fold2")
	if len(a) > 63 || len(b) > 63 || a == b {
		t.Errorf("long names %q and %q: each at most 63 bytes and distinct", a, b)
	}
	for _, suffix := range []string{"_gram", "_fk"} {
		if n := shortName(a + suffix); len(n) > 63 || n == a {
			t.Errorf("the name %q of the index's %s: at most 63 bytes and not the table's", n, suffix)
		}
	}
}
