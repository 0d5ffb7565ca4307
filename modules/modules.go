// Package modules lists the cloud modules this build offers. Each module is
// one package below this folder with a func Module() module.Module; the list
// in registry_gen.go is generated from the folders (go generate ./modules,
// which make build runs), so adding a module touches nothing else.
package modules

//go:generate go run ./internal/genregistry .
