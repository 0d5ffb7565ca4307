package aws_security_group_test

import (
	"maps"
	"testing"
)

// TestNoOpChangesMakeNoCloudCalls: each case takes one of the "Mapper
// Footguns" of 001_fb6c1a16f93f1ed0.txt, sets up state, then makes a change
// that means nothing to AWS (or, for joins, a change to one resource that
// means nothing to the ones joined to it) and commits: the cloud must see
// no mutating call beyond the expected ones, the row must still read as
// the user wrote it, and nothing the case names may change.
func TestNoOpChangesMakeNoCloudCalls(t *testing.T) {
	t.Parallel()
	const (
		web     = `INSERT INTO security_group (group_name, description, tags) VALUES ('web', 'web servers', '{"a":"1","b":"2"}')`
		https   = `INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4) SELECT id, 'tcp', 443, 443, '0.0.0.0/0' FROM security_group WHERE group_name = 'web'`
		all     = `INSERT INTO security_group_rule (security_group_id, ip_protocol, cidr_ipv4) SELECT id, '-1', '10.0.0.0/8' FROM security_group WHERE group_name = 'web'`
		webRule = `SELECT rule_id FROM security_group_rule WHERE from_port = 443`
		allRule = `SELECT rule_id FROM security_group_rule WHERE cidr_ipv4 = '10.0.0.0/8'`
		groupID = `SELECT group_id FROM security_group WHERE group_name = 'web'`
	)
	cases := []struct {
		name    string
		footgun string // the footgun of 001_fb6c1a16f93f1ed0.txt
		setup   [][]string
		change  []string
		calls   map[string]int // the mutating calls the change may make (none when nil)
		check   string         // a query that must count 1 afterwards
		stable  string         // a query whose text result the change must not alter
	}{
		{
			name:    "rule description NULL set to empty",
			footgun: "nullable columns: NULL and undefined/empty compared as different loop on updates",
			setup:   [][]string{{web, https}},
			change:  []string{`UPDATE security_group_rule SET description = '' WHERE from_port = 443`},
			check:   `SELECT count(*) FROM security_group_rule WHERE from_port = 443 AND description = '' AND rule_id IS NOT NULL`,
			stable:  webRule,
		},
		{
			name:    "rule description empty set to NULL",
			footgun: "nullable columns: NULL and undefined/empty compared as different loop on updates",
			setup:   [][]string{{web, https, `UPDATE security_group_rule SET description = '' WHERE from_port = 443`}},
			change:  []string{`UPDATE security_group_rule SET description = NULL WHERE from_port = 443`},
			check:   `SELECT count(*) FROM security_group_rule WHERE from_port = 443 AND description IS NULL`,
			stable:  webRule,
		},
		{
			name:    "tags rewritten with other key order and whitespace",
			footgun: "human-editable JSON: non-significant order and whitespace differences loop on updates",
			setup:   [][]string{{web}},
			change:  []string{`UPDATE security_group SET tags = '{ "b":"2",  "a":"1"}' WHERE group_name = 'web'`},
			check:   `SELECT count(*) FROM security_group WHERE group_name = 'web' AND tags = '{"a":"1","b":"2"}'::jsonb`,
			stable:  groupID,
		},
		{
			name:    "tag value written as a number",
			footgun: "human-editable JSON: a tag value 1 and the string \"1\" AWS stores are the same tag",
			setup:   [][]string{{`INSERT INTO security_group (group_name, description, tags) VALUES ('web', 'web servers', '{"n":"1"}')`}},
			change:  []string{`UPDATE security_group SET tags = '{"n":1}' WHERE group_name = 'web'`},
			check:   `SELECT count(*) FROM security_group WHERE group_name = 'web' AND tags = '{"n":1}'::jsonb`,
			stable:  groupID,
		},
		{
			name:    "protocol tcp written as 6",
			footgun: "equality must see no difference where there is no actionable change: protocol spellings",
			setup:   [][]string{{web, https}},
			change:  []string{`UPDATE security_group_rule SET ip_protocol = '6' WHERE from_port = 443`},
			check:   `SELECT count(*) FROM security_group_rule WHERE from_port = 443 AND ip_protocol = 'tcp'`,
			stable:  webRule,
		},
		{
			name:    "protocol tcp written as TCP",
			footgun: "equality must see no difference where there is no actionable change: protocol spellings",
			setup:   [][]string{{web, https}},
			change:  []string{`UPDATE security_group_rule SET ip_protocol = 'TCP' WHERE from_port = 443`},
			check:   `SELECT count(*) FROM security_group_rule WHERE from_port = 443 AND ip_protocol = 'tcp'`,
			stable:  webRule,
		},
		{
			name:    "protocol -1 written as all",
			footgun: "equality must see no difference where there is no actionable change: protocol spellings",
			setup:   [][]string{{web, all}},
			change:  []string{`UPDATE security_group_rule SET ip_protocol = 'all' WHERE cidr_ipv4 = '10.0.0.0/8'`},
			check:   `SELECT count(*) FROM security_group_rule WHERE cidr_ipv4 = '10.0.0.0/8' AND ip_protocol = '-1' AND from_port IS NULL AND to_port IS NULL`,
			stable:  allRule,
		},
		{
			name:    "protocol -1 given the -1 ports AWS reports",
			footgun: "nullable columns: NULL ports in the table, -1/-1 from AWS",
			setup:   [][]string{{web, all}},
			change:  []string{`UPDATE security_group_rule SET from_port = -1, to_port = -1 WHERE cidr_ipv4 = '10.0.0.0/8'`},
			check:   `SELECT count(*) FROM security_group_rule WHERE cidr_ipv4 = '10.0.0.0/8' AND ip_protocol = '-1' AND from_port IS NULL AND to_port IS NULL`,
			stable:  allRule,
		},
		{
			name:    "read-only regions rewritten unchanged",
			footgun: "read-only records: cloud CRUD must only re-save the cloud's record",
			change:  []string{`UPDATE aws_regions SET region = region`},
			check:   `SELECT count(*) FROM aws_regions WHERE region = 'us-east-1' AND is_default AND is_enabled`,
			stable:  `SELECT string_agg(id || ' ' || region, ',' ORDER BY id) FROM aws_regions`,
		},
		{
			name:    "read-only region row deleted",
			footgun: "read-only records: deleting one brings it back from the cloud",
			change:  []string{`DELETE FROM aws_regions WHERE region = 'eu-west-1'`},
			check:   `SELECT count(*) FROM aws_regions WHERE region = 'eu-west-1' AND is_enabled AND NOT is_default`,
			stable:  `SELECT string_agg(vpc_id, ',' ORDER BY vpc_id) FROM vpc WHERE region = 'eu-west-1'`,
		},
		{
			name:    "read-only region row deleted: the region's resources keep their rows",
			footgun: "read-only records: restoring one must not disturb the rows that live in it",
			change:  []string{`DELETE FROM aws_regions WHERE region = 'eu-west-1'`},
			check:   `SELECT count(*) FROM aws_regions WHERE region = 'eu-west-1'`,
			stable: `SELECT (SELECT string_agg(id || ' ' || vpc_id, ',' ORDER BY id) FROM vpc WHERE region = 'eu-west-1') || ' / ' ||
				(SELECT string_agg(id || ' ' || group_id, ',' ORDER BY id) FROM security_group WHERE region = 'eu-west-1')`,
		},
		{
			name:    "cycle after a replacement with a unique name",
			footgun: "create-only with unique columns: the replacement must leave nothing to do",
			setup: [][]string{{web, https,
				`INSERT INTO security_group (group_name, description) VALUES ('db', 'database')`,
				`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, source_security_group_id)
				   SELECT d.id, 'tcp', 5432, 5432, w.id FROM security_group d, security_group w WHERE d.group_name = 'db' AND w.group_name = 'web'`},
				{`UPDATE security_group SET description = 'web servers v2' WHERE group_name = 'web'`}},
			check:  `SELECT count(*) FROM security_group WHERE group_name = 'web' AND description = 'web servers v2' AND group_id IS NOT NULL AND NOT EXISTS (SELECT FROM iasql_replacements)`,
			stable: `SELECT string_agg(coalesce(group_id, '?'), ',' ORDER BY id) FROM security_group`,
		},
		{
			name:    "referenced group's tags changed",
			footgun: "join on the database id: a change to a referenced resource leaves what references it alone",
			setup: [][]string{{web,
				`INSERT INTO security_group (group_name, description) VALUES ('db', 'database')`,
				`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, source_security_group_id)
				   SELECT d.id, 'tcp', 5432, 5432, w.id FROM security_group d, security_group w WHERE d.group_name = 'db' AND w.group_name = 'web'`}},
			change: []string{`UPDATE security_group SET tags = '{"a":"1","b":"2","c":"3"}' WHERE group_name = 'web'`},
			calls:  map[string]int{"ec2:CreateTags": 1},
			check:  `SELECT count(*) FROM security_group_rule r JOIN security_group w ON w.id = r.source_security_group_id WHERE w.group_name = 'web' AND r.from_port = 5432`,
			stable: `SELECT string_agg(id || ' ' || coalesce(rule_id, '?'), ',' ORDER BY id) FROM security_group_rule`,
		},
		{
			name:    "cycle after a vpc replacement, with a group in it",
			footgun: "join on the database id, not a cloud-generated one: a VPC replaced under a new vpc_id takes its groups along",
			setup: [][]string{{`INSERT INTO vpc (cidr_block) VALUES ('10.6.0.0/16')`},
				{`INSERT INTO security_group (group_name, description, vpc_id) SELECT 'app', 'app servers', id FROM vpc WHERE cidr_block = '10.6.0.0/16'`,
					`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4) SELECT id, 'tcp', 80, 80, '0.0.0.0/0' FROM security_group WHERE group_name = 'app'`},
				{`UPDATE vpc SET cidr_block = '10.7.0.0/16' WHERE cidr_block = '10.6.0.0/16'`}},
			check: `SELECT count(*) FROM security_group g JOIN vpc v ON v.id = g.vpc_id JOIN security_group_rule r ON r.security_group_id = g.id
				WHERE g.group_name = 'app' AND v.cidr_block = '10.7.0.0/16' AND g.group_id IS NOT NULL AND r.from_port = 80 AND r.rule_id IS NOT NULL
				  AND NOT EXISTS (SELECT FROM iasql_replacements)`,
			stable: `SELECT string_agg(coalesce(group_id, '?'), ',' ORDER BY id) FROM security_group`,
		},
		{
			name:    "vpc rewritten with the same values",
			footgun: "cloud-generated identity: a row rewritten as it is keeps its vpc_id and changes nothing",
			setup:   [][]string{{`INSERT INTO vpc (cidr_block, tags) VALUES ('10.5.0.0/16', '{"x":"y"}')`}},
			change:  []string{`UPDATE vpc SET cidr_block = cidr_block, tags = tags WHERE cidr_block = '10.5.0.0/16'`},
			check:   `SELECT count(*) FROM vpc WHERE cidr_block = '10.5.0.0/16' AND vpc_id IS NOT NULL AND tags = '{"x":"y"}'::jsonb`,
			stable:  `SELECT vpc_id FROM vpc WHERE cidr_block = '10.5.0.0/16'`,
		},
		{
			name:    "rule imported from the cloud rewritten unchanged",
			footgun: "records generated from the cloud lack database-only columns: they must match the rows, not duplicate them",
			setup:   [][]string{{web}}, // AWS gives it a default egress rule, imported
			change: []string{`UPDATE security_group_rule SET is_egress = is_egress, description = description
				WHERE security_group_id = (SELECT id FROM security_group WHERE group_name = 'web')`},
			check:  `SELECT count(*) FROM security_group_rule r JOIN security_group g ON g.id = r.security_group_id WHERE g.group_name = 'web' AND r.is_egress AND r.ip_protocol = '-1' HAVING count(*) = 1`,
			stable: `SELECT string_agg(id || ' ' || coalesce(rule_id, '?'), ',' ORDER BY id) FROM security_group_rule`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			for _, step := range c.setup {
				e.Exec(step...)
				e.Commit()
			}
			before := e.String(c.stable)
			e.Emu.Reset()
			e.Exec(c.change...)
			e.Commit()
			want := c.calls
			if want == nil {
				want = map[string]int{}
			}
			if got := e.Mutations(); !maps.Equal(got, want) {
				t.Errorf("footgun %q: the change made calls %v, want %v", c.footgun, got, want)
			}
			if n := e.Count(c.check); n != 1 {
				t.Errorf("footgun %q: after the change, %s counts %d, want 1", c.footgun, c.check, n)
			}
			if after := e.String(c.stable); after != before {
				t.Errorf("footgun %q: %s was %q, now %q", c.footgun, c.stable, before, after)
			}
			// And nothing is left for later cycles (no update loop).
			e.Emu.Reset()
			e.Refresh() // reads everything, acts on nothing
			if got := e.Mutations(); len(got) != 0 {
				t.Errorf("footgun %q: the next cycle made calls %v", c.footgun, got)
			}
		})
	}
}
