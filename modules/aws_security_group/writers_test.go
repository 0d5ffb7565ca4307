package aws_security_group_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgtest"
)

// TestWritersAreNotALoop: sessions keep updating the tags of security
// groups while commits run back to back. A record a user keeps changing is
// new intent each time, not a loop: no commit fails as "not converging";
// each enacts what was committed before it and leaves newer changes to the
// next cycle. Once the writers stop, one commit brings the cloud to the
// rows' last tags.
//
// The writers write while the engine tags (CreateTags is slowed down, and
// each writer changes a group whenever a CreateTags call arrives): every
// pass of a cycle finds new changes, each to a group the pass before did
// not act on.
func TestWritersAreNotALoop(t *testing.T) {
	t.Parallel()
	const writers, perWriter, commits = 2, 10, 3
	e := newEnv(t)
	e.Exec(fmt.Sprintf(`INSERT INTO security_group (group_name, description, tags)
		SELECT 'busy-' || n, 'busy group', '{"n":"0"}' FROM generate_series(1, %d) n`, writers*perWriter))
	e.Commit()
	e.Emu.Inject(emulator.Fault{Op: "ec2:CreateTags", Kind: emulator.Latency, Delay: 300 * time.Millisecond})
	tagCalls := func() int { return e.Emu.Calls()["ec2:CreateTags"] }
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	writes := 0
	for w := range writers {
		conn := pgtest.Connect(t, e.DSN)
		wg.Go(func() {
			seen := tagCalls()
			for i := 0; ctx.Err() == nil; i++ {
				// Each writer goes round its own groups, one change each
				// time it sees CreateTags calls (the first of a pass's few:
				// a pass changes at most a couple of groups per writer, so
				// the next pass acts on groups the last one did not).
				for ctx.Err() == nil && tagCalls() == seen {
					time.Sleep(5 * time.Millisecond)
				}
				seen = tagCalls()
				name := fmt.Sprintf("busy-%d", w*perWriter+(i+1)%perWriter+1)
				if _, err := conn.Exec(ctx, `UPDATE security_group SET tags = jsonb_build_object('n', $1::text) WHERE group_name = $2`, fmt.Sprint(i+1), name); err != nil {
					if ctx.Err() == nil {
						t.Errorf("user write: %v", err)
					}
					return
				}
				mu.Lock()
				writes++
				mu.Unlock()
			}
		})
	}
	// A change to each writer's first group sets them going.
	e.Exec(fmt.Sprintf(`UPDATE security_group SET tags = '{"n":"start"}' WHERE group_name IN ('busy-1', 'busy-%d')`, perWriter+1))
	var failed []string
	for range commits {
		if _, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`); err != nil {
			failed = append(failed, err.Error())
		}
	}
	stop()
	wg.Wait()
	e.Emu.ClearFaults()
	if len(failed) > 0 {
		t.Errorf("%d of %d commits failed while users wrote: %s", len(failed), commits, strings.Join(failed, "\n"))
	}
	if writes < commits {
		t.Fatalf("only %d user writes happened during %d commits: the test did not test anything", writes, commits)
	}
	e.Commit()
	out, err := e.ec2.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{
		Filters: []types.Filter{{Name: aws.String("group-name"), Values: []string{"busy-*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	cloud := map[string]string{}
	for _, g := range out.SecurityGroups {
		for _, tag := range g.Tags {
			if aws.ToString(tag.Key) == "n" {
				cloud[aws.ToString(g.GroupName)] = aws.ToString(tag.Value)
			}
		}
	}
	rows, err := e.DB.Query(context.Background(), `SELECT group_name, tags->>'n' FROM security_group WHERE group_name LIKE 'busy-%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, tag string
		if err := rows.Scan(&name, &tag); err != nil {
			t.Fatal(err)
		}
		n++
		if cloud[name] != tag {
			t.Errorf("group %s: the row's tag n is %q, the cloud's %q", name, tag, cloud[name])
		}
	}
	if n != writers*perWriter {
		t.Errorf("%d busy groups in the table, want %d", n, writers*perWriter)
	}
}
