// Command gen writes the extension's install and upgrade scripts from sql/
// into a folder: go run ./sql/gen extension
package main

import (
	"fmt"
	"os"
	"path/filepath"

	iasqlsql "github.com/iasql/iasql/sql"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./sql/gen DIR")
		os.Exit(2)
	}
	for name, body := range iasqlsql.ExtensionFiles() {
		if err := os.WriteFile(filepath.Join(os.Args[1], name), []byte(body), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
