package openapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"personnel/config"
	"personnel/openapi"
	"personnel/resource"
)

func TestBuild_HeadersBelongToTheirOperation(t *testing.T) {
	rs, _ := config.Resources()
	r := rs[0]
	in := openapi.Input{APIRoot: "/api", Routes: []resource.Route{
		{Method: http.MethodPost, Path: "/x/", Op: resource.OpCreate, Resource: r},
		{Method: http.MethodGet, Path: "/x/{id}/", Op: resource.OpRead, Resource: r},
	}}
	data, err := openapi.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]any
			}
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if h := doc.Paths["/api/x/"]["post"].Responses["201"].Headers; h["Location"] == nil || h["ETag"] == nil {
		t.Errorf("create lacks Location or ETag: %v", h)
	}
	if h := doc.Paths["/api/x/{id}/"]["get"].Responses["200"].Headers; h["Location"] != nil || h["ETag"] == nil {
		t.Errorf("read documents %v, want ETag only", h)
	}
}

func TestBuild_AnUndocumentedOperationIsAnError(t *testing.T) {
	rs, _ := config.Resources()
	_, err := openapi.Build(openapi.Input{Routes: []resource.Route{{Method: "GET", Path: "/x/", Op: "frobnicate", Resource: rs[0]}}})
	if err == nil {
		t.Fatal("an operation without documentation was accepted")
	}
}
