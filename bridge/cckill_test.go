package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

// TestCloudControlCreateSurvivesSIGKILL: the sidecar process is killed
// while Cloud Control works on a create it asked for (the client token
// persisted, the request's handle maybe not); the next sidecar finishes it
// and the row gets that resource: one queue, never two.
func TestCloudControlCreateSurvivesSIGKILL(t *testing.T) {
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{"AWS::SQS::Queue"},
		Emulator: emulator.Options{CloudControlDelay: 3 * time.Second},
	})
	e.Stop() // the in-process sidecar makes way for one that can be killed
	sc := startBinarySidecar(t, e)

	e.Exec(`INSERT INTO aws_sqs_queue (queue_name) VALUES ('killed-mid-create')`)
	done := callAsync(t, e.DSN, `CALL iasql_commit()`, nil)
	testkit.Until(t, 30*time.Second, "the create to reach Cloud Control", func() bool {
		return e.Emu.Calls()["cloudcontrolapi:CreateResource"] > 0
	})
	sc.Kill()
	if err := waitCall(t, done); err == nil {
		t.Log("the commit was answered before the kill")
	}

	startBinarySidecar(t, e)
	e.Commit()
	var urls []string
	p := cloudcontrol.NewListResourcesPaginator(cloudcontrol.NewFromConfig(e.AWS), &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::SQS::Queue")})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.ResourceDescriptions {
			urls = append(urls, aws.ToString(d.Identifier))
		}
	}
	if len(urls) != 1 || !strings.HasSuffix(urls[0], "/killed-mid-create") {
		t.Fatalf("queues in the cloud: %v; want exactly the one", urls)
	}
	if got := e.String(`SELECT queue_url FROM aws_sqs_queue WHERE queue_name = 'killed-mid-create'`); got != urls[0] {
		t.Errorf("row's queue_url %q, the cloud's %q", got, urls[0])
	}
	if n := e.Count(`SELECT count(*) FROM aws_sqs_queue`); n != 1 {
		t.Errorf("%d rows; want the one (no import of the killed create's queue as a second row)", n)
	}
}
