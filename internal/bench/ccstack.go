package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

const (
	// ccTypes types (synthetic schemas, no rows) are installed for the
	// list budget's figure.
	ccTypes = 200
	// ccStackChildren routes and as many integrations hang from one API in
	// the stack's commit, each Cloud Control request taking ccDelay.
	ccStackChildren = 10
)

// cloudControlStackPart measures what references and the list budget give
// Cloud Control tables:
//
//   - cc_cycle_calls_200_types: the most Cloud Control calls a scheduled
//     cycle with nothing to do makes with 200 installed types (no rows);
//     goal: at most the list budget (aws_cloudcontrol.DefaultBudget);
//   - cc_stack_commit_s: the wall time of one CALL iasql_commit() making an
//     API, 10 routes and 10 integrations (the children naming the API by
//     api_id_ref), each request IN_PROGRESS for 1 s in the emulator; goal:
//     under 5 s (the API, then its children together).
func (b *bench) cloudControlStackPart(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "iasql-bench-schemas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var types []string
	for i := range ccTypes {
		name := fmt.Sprintf("Bench::Budget::Thing%03d", i)
		types = append(types, name)
		doc := fmt.Sprintf(`{"typeName": %q, "description": "A thing for the list budget's figure.",
			"properties": {"Name": {"type": "string", "description": "Name."}},
			"additionalProperties": false, "required": ["Name"], "createOnlyProperties": ["/properties/Name"],
			"primaryIdentifier": ["/properties/Name"],
			"handlers": {"create": {"permissions": []}, "read": {"permissions": []}, "update": {"permissions": []}, "delete": {"permissions": []}, "list": {"permissions": []}}}`, name)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("thing%03d.json", i)), []byte(doc), 0o644); err != nil {
			return err
		}
	}
	const db = "bench_cc_stack"
	maxCalls := 0
	var commit time.Duration
	err = b.withDB(ctx, db, func(conn *pgx.Conn) error {
		emu, cfg, stopEmu, err := startEmulatorWith(ctx, emulator.Options{SchemaDir: dir})
		if err != nil {
			return err
		}
		defer stopEmu()
		stop, err := b.runEngineWith(ctx, conn, db, cfg, 3*time.Second, nil, []module.Catalog{aws_cloudcontrol.Catalog()})
		if err != nil {
			return err
		}
		defer stop()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install(VARIADIC $1::text[])`, types); err != nil {
			return fmt.Errorf("install %d types: %w", ccTypes, err)
		}
		b.logf("cloud control: %d types installed; counting the calls of scheduled cycles", ccTypes)
		var last int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM iasql_audit_log`).Scan(&last); err != nil {
			return err
		}
		for n := 0; n < 5; n++ {
			emu.Reset()
			if err := waitFor(ctx, 2*time.Minute, func() (bool, error) {
				var id int64
				err := conn.QueryRow(ctx, `SELECT id FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND id > $1
					AND message::jsonb->>'reason' = 'schedule' ORDER BY id LIMIT 1`, last).Scan(&id)
				if err == pgx.ErrNoRows {
					return false, nil
				}
				last = id
				return err == nil, err
			}); err != nil {
				return fmt.Errorf("wait for a scheduled cycle: %w", err)
			}
			calls := 0
			for op, k := range emu.Calls() {
				if strings.HasPrefix(op, "cloudcontrolapi:") {
					calls += k
				}
			}
			if n > 0 { // the first may have begun before the reset
				maxCalls = max(maxCalls, calls)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The stack, in a database of its own: one API and its children in one
	// commit.
	err = b.withDB(ctx, db+"_api", func(conn *pgx.Conn) error {
		emu, cfg, stopEmu, err := startEmulatorWith(ctx, emulator.Options{})
		if err != nil {
			return err
		}
		defer stopEmu()
		stop, err := b.runEngineWith(ctx, conn, db+"_api", cfg, time.Hour, nil, []module.Catalog{aws_cloudcontrol.Catalog()})
		if err != nil {
			return err
		}
		defer stop()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('AWS::ApiGatewayV2::Api', 'AWS::ApiGatewayV2::Route', 'AWS::ApiGatewayV2::Integration')`); err != nil {
			return fmt.Errorf("install the API types: %w", err)
		}
		emu.SetCloudControlDelay(ccDelay)
		for _, q := range []string{`CALL iasql_begin()`,
			`INSERT INTO aws_apigatewayv2_api (name, protocol_type) VALUES ('stack', 'HTTP')`,
			fmt.Sprintf(`INSERT INTO aws_apigatewayv2_integration (api_id_ref, integration_type, integration_uri, integration_method, payload_format_version)
				SELECT currval('aws_apigatewayv2_api_id_seq'), 'HTTP_PROXY', format('https://backend.example.com/%%s', i), 'ANY', '1.0' FROM generate_series(1, %d) i`, ccStackChildren),
			fmt.Sprintf(`INSERT INTO aws_apigatewayv2_route (api_id_ref, route_key)
				SELECT currval('aws_apigatewayv2_api_id_seq'), format('GET /items/%%s', i) FROM generate_series(1, %d) i`, ccStackChildren)} {
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		start := time.Now()
		if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
			return fmt.Errorf("commit the stack: %w", err)
		}
		commit = time.Since(start)
		var under int
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM aws_apigatewayv2_route r JOIN aws_apigatewayv2_api a ON a.id = r.api_id_ref AND r.api_id = a.api_id)
			+ (SELECT count(*) FROM aws_apigatewayv2_integration g JOIN aws_apigatewayv2_api a ON a.id = g.api_id_ref AND g.api_id = a.api_id)`).Scan(&under); err != nil || under != 2*ccStackChildren {
			return fmt.Errorf("after the commit %d children name the API's id (%v), want %d", under, err, 2*ccStackChildren)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.figure("cc_cycle_calls_200_types", "%.0f", float64(maxCalls))
	fmt.Fprintf(b.log, "# goal: cc_cycle_calls_200_types = %d <= %d (the list budget): %s\n", maxCalls, aws_cloudcontrol.DefaultBudget, met(maxCalls <= aws_cloudcontrol.DefaultBudget))
	s := commit.Seconds()
	b.figure("cc_stack_commit_s", "%.1f", s)
	fmt.Fprintf(b.log, "# goal: cc_stack_commit_s = %.1f < 5 (an API, %d routes and %d integrations, %s a request): %s\n", s, ccStackChildren, ccStackChildren, ccDelay, met(s < 5))
	return nil
}
