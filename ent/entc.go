//go:build ignore

// This program runs Ent's code generation with the features and templates
// Personnel uses; `go generate ./...` runs it (see generate.go).
package main

import (
	"log"

	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
)

func main() {
	err := entc.Generate("./schema", &gen.Config{
		Features: []gen.Feature{
			gen.FeatureLock,      // SELECT ... FOR UPDATE for hierarchy changes on MySQL
			gen.FeatureModifier,  // custom SELECTs (keyed pages, recursive queries)
			gen.FeatureExecQuery, // raw statements on a client or transaction
		},
		Templates: []*gen.Template{
			gen.MustParse(gen.NewTemplate("hierarchy").ParseFiles("template/hierarchy.tmpl")),
		},
	})
	if err != nil {
		log.Fatalf("running ent codegen: %v", err)
	}
}
