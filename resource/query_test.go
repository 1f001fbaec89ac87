package resource

import (
	"math"
	"net/url"
	"strings"
	"testing"

	"personnel/apierror"
)

// pythonInt reads what CPython's int(str) reads, and refuses what it
// refuses.
func TestPythonInt_ReadsWhatPythonsIntReads(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
		ok   bool
	}{
		{"1", 1, true}, {"+1", 1, true}, {" 1 ", 1, true}, {"\t\n1\r\x0b\x0c", 1, true}, {"\u00a01\u3000", 1, true},
		{"\x1c1\x1f", 1, true}, {"1_0", 10, true}, {"1_000_000", 1000000, true}, {"007", 7, true}, {"-3", -3, true},
		{"-0", 0, true}, {"١٢", 12, true}, {"１２", 12, true}, {"𝟗𝟗", 99, true}, {"۳", 3, true},
		{"99999999999999999999999", math.MaxInt, true},
		{"", 0, false}, {" ", 0, false}, {"+", 0, false}, {"_1", 0, false}, {"1_", 0, false}, {"1__0", 0, false},
		{"+_1", 0, false}, {"1.0", 0, false}, {"1e3", 0, false}, {"0x10", 0, false}, {"- 1", 0, false}, {"++1", 0, false},
		{"1 2", 0, false}, {"abc", 0, false}, {"Ⅻ", 0, false}, {"½", 0, false}, {"\u200b1", 0, false},
	} {
		got, ok := pythonInt(tc.s)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("pythonInt(%q) = %d, %v; want %d, %v", tc.s, got, ok, tc.want, tc.ok)
		}
	}
}

// fieldErrors returns the messages of a 400, by parameter; it fails on any
// other result.
func fieldErrors(t *testing.T, err error) map[string]string {
	t.Helper()
	ae := apierror.As(err)
	if err == nil || ae.Kind != apierror.Invalid {
		t.Fatalf("got %v, want a 400", err)
	}
	m := map[string]string{}
	for _, fe := range ae.Fields {
		m[fe.Field] = fe.Msg
	}
	return m
}

func parse(t *testing.T, r *Resource, raw string, extra ...string) (Query, error) {
	t.Helper()
	values, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return r.ParseQuery(values, extra...)
}

func TestParseQuery_PageSizeIsPythonsIntThenPositiveThenTheCutoff(t *testing.T) {
	lenient, strict := fuzzResource(false), fuzzResource(true)
	for raw, want := range map[string]int{"%2B1": 1, "+1": 1, "%201%20": 1, "1_0": 10, "5000": 1000, "0_7": 7} {
		for _, r := range []*Resource{lenient, strict} {
			if q, err := parse(t, r, "page_size="+raw); err != nil || q.PageSize != want {
				t.Errorf("page_size=%s (strict %v): %+v, %v; want %d", raw, r.opts.StrictQuery, q, err, want)
			}
		}
	}
	for _, raw := range []string{"0", "-1", "abc", "1__0", ""} {
		if q, err := parse(t, lenient, "page_size="+raw); err != nil || q.PageSize != DefaultPageSize {
			t.Errorf("page_size=%s: %+v, %v; want the default", raw, q, err)
		}
		_, err := parse(t, strict, "page_size="+raw)
		if msg := fieldErrors(t, err)["page_size"]; msg != "Enter a positive integer." {
			t.Errorf("strict page_size=%s: %q", raw, msg)
		}
	}
}

func TestParseQuery_AChoiceFilterRefusesANonChoice(t *testing.T) {
	r := fuzzResource(false)
	_, err := parse(t, r, "grade=bogus&grade__exact=Senior")
	got := fieldErrors(t, err)
	if got["grade"] != "Select a valid choice. bogus is not one of the available choices." ||
		got["grade__exact"] != "Select a valid choice. Senior is not one of the available choices." {
		t.Fatalf("errors %v", got)
	}
	if q, err := parse(t, r, "grade=senior"); err != nil || len(q.Filters) != 1 || q.Filters[0].Value.Str != "senior" {
		t.Fatalf("grade=senior: %+v, %v", q, err)
	}
}

func TestParseQuery_BooleanFiltersIgnoreLetterCase(t *testing.T) {
	r := fuzzResource(false)
	for raw, want := range map[string]int64{"true": 1, "TRUE": 1, "tRuE": 1, "1": 1, "false": 0, "False": 0, "FALSE": 0, "0": 0} {
		q, err := parse(t, r, "active="+raw)
		if err != nil || len(q.Filters) != 1 || q.Filters[0].Value.Int != want {
			t.Errorf("active=%s: %+v, %v", raw, q, err)
		}
	}
	if _, err := parse(t, r, "active=yes"); fieldErrors(t, err)["active"] == "" {
		t.Error("active=yes was accepted")
	}
}

func TestParseQuery_StrictModeNamesEveryUnknownParameter(t *testing.T) {
	r := fuzzResource(true)
	_, err := parse(t, r, "dept_nme=x&active_isnull=true&dept_name__iexact=x&note_gte=a&colour=&ordering=level,-level")
	got := fieldErrors(t, err)
	for param, says := range map[string]string{
		"dept_nme":          "Unknown parameter; this endpoint takes page, page_size, ordering, search, dept_code,",
		"active_isnull":     "active has no isnull filter; its filters are active.",
		"dept_name__iexact": "dept_name has no iexact filter; its filters are dept_name, dept_name_icontains.",
		"note_gte":          "note has no gte filter",
		"colour":            "Unknown parameter",
		"ordering":          `"-level" repeats level`,
	} {
		if !strings.Contains(got[param], says) {
			t.Errorf("%s: %q, want it to say %q", param, got[param], says)
		}
	}
	if len(got) != 6 {
		t.Errorf("errors %v, want six", got)
	}
	// Its own parameters, search, and those an endpoint adds.
	if _, err := parse(t, r, "page=2&page_size=5&search=x&grade=senior&level__gte=3&parent_dept__isnull=true&expand=x", "expand"); err != nil {
		t.Errorf("known parameters: %v", err)
	}
	if _, err := parse(t, fuzzResource(false), "dept_nme=x&ordering=level,-level"); err != nil {
		t.Errorf("lenient: %v", err)
	}
}

func TestCheckParams_StrictModeRefusesWhatTheEndpointDoesNotTake(t *testing.T) {
	values := url.Values{"root": {"1"}, "depth": {"2"}, "page_size": {"5"}}
	got := fieldErrors(t, fuzzResource(true).CheckParams(values, "root", "depth"))
	if len(got) != 1 || got["page_size"] != "Unknown parameter; this endpoint takes root, depth." {
		t.Errorf("errors %v", got)
	}
	if err := fuzzResource(false).CheckParams(values, "root", "depth"); err != nil {
		t.Errorf("lenient: %v", err)
	}
	if err := fuzzResource(true).CheckParams(url.Values{"depth": {"x"}}, "root", "depth"); err != nil {
		t.Errorf("a known parameter: %v", err)
	}
}

// Python's dates, and so Django REST Framework's, begin with year 1.
func TestParseDate_RefusesYearZero(t *testing.T) {
	for s, ok := range map[string]bool{"0000-01-01": false, "0000-12-31": false, "0001-01-01": true, "9999-12-31": true, "2024-02-29": true, "2023-02-29": false} {
		if _, got := parseDate(s); got != ok {
			t.Errorf("parseDate(%q) ok = %v, want %v", s, got, ok)
		}
	}
	r := fuzzResource(false)
	_, err := parse(t, r, "valid_from_gte=0000-01-01")
	if fieldErrors(t, err)["valid_from_gte"] == "" {
		t.Error("a filter from year 0 was accepted")
	}
}
