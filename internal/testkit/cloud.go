package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/modules/module"
)

// Cloud is the AWS emulator serving on a loopback port until the test ends.
type Cloud struct {
	Emu *emulator.Emulator
	URL string     // its endpoint (AWS_ENDPOINT_URL of a child)
	AWS aws.Config // emulator.ClientConfig(URL)
}

// StartCloud starts an emulator with opts; it stops when the test ends.
func StartCloud(t testing.TB, opts emulator.Options) *Cloud {
	t.Helper()
	emu := emulator.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := emu.Start(ctx, "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := s.Wait(); err != nil {
			t.Logf("the emulator: %v", err)
		}
	})
	return &Cloud{Emu: emu, URL: s.URL, AWS: emulator.ClientConfig(s.URL)}
}

// PathStyle makes an S3 client address buckets by path, as the emulator
// serves them: s3.NewFromConfig(cfg, testkit.PathStyle).
func PathStyle(o *s3.Options) { o.UsePathStyle = true }

// Clients makes one service's clients for cfg, one per signing region,
// without retries (an out-of-band client, as another tool would use, that
// shows a fault at once): newClient is the service's NewFromConfig, opts
// its options.
func Clients[C, O any](cfg aws.Config, newClient func(aws.Config, ...func(*O)) C, opts ...func(*O)) func(region string) C {
	return func(region string) C {
		c := cfg
		c.Region = region
		c.RetryMaxAttempts = 1
		return newClient(c, opts...)
	}
}

// Mappers builds mod's mappers for cfg, failing t unless every table of
// mod has one.
func Mappers(t testing.TB, mod module.Module, cfg aws.Config) map[string]module.Reader {
	t.Helper()
	ms, err := mod.Mappers(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range mod.Tables {
		if ms[tbl.Name] == nil {
			t.Fatalf("no mapper for table %s", tbl.Name)
		}
	}
	return ms
}

// WaitCloudControl waits until the Cloud Control request ev started is no
// longer PENDING or IN_PROGRESS (GetResourceRequestStatus) and returns its
// last progress event; it fails the test if the status cannot be read.
func WaitCloudControl(t testing.TB, timeout time.Duration, c *cloudcontrol.Client, ev *cctypes.ProgressEvent) *cctypes.ProgressEvent {
	t.Helper()
	if ev == nil || aws.ToString(ev.RequestToken) == "" {
		t.Fatalf("no request token in %+v", ev)
	}
	last := ev
	Wait(t, timeout, "the Cloud Control request "+aws.ToString(ev.RequestToken)+" to end", func() error {
		out, err := c.GetResourceRequestStatus(context.Background(), &cloudcontrol.GetResourceRequestStatusInput{RequestToken: ev.RequestToken})
		if err != nil {
			t.Fatalf("GetResourceRequestStatus: %v", err)
		}
		last = out.ProgressEvent
		switch last.OperationStatus {
		case cctypes.OperationStatusPending, cctypes.OperationStatusInProgress:
			return fmt.Errorf("still %s", last.OperationStatus)
		}
		return nil
	})
	return last
}
