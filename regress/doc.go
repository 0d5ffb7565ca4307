// Package regress holds the pg_regress suites of the iasql extension:
// sql/*.sql run by `make -C extension installcheck` against a live server,
// their output compared with expected/*.out. regress_test.go runs them from
// `go test` against a throwaway cluster (or the server in IASQL_TEST_DSN).
package regress
