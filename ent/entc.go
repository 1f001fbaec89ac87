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
			gen.FeatureLock,      // SELECT ... FOR UPDATE of users (the last active editor safeguard)
			gen.FeatureExecQuery, // raw statements on a client or transaction (the resource store's SQL)
		},
	})
	if err != nil {
		log.Fatalf("running ent codegen: %v", err)
	}
}
