package emulator

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// ClientConfig is the SDK configuration for talking to an emulator at url
// (Server.URL), as the demo, the benchmark and the tests do: region
// us-east-1, static test credentials, checksums only where required.
func ClientConfig(url string) aws.Config {
	return aws.Config{
		Region:                     "us-east-1",
		Credentials:                credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:               aws.String(url),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		HTTPClient:                 &http.Client{Transport: bodyTransport{http.DefaultTransport}},
	}
}

// bodyTransport hides the WriteTo method of request bodies from net/http,
// to avoid a race between the SDK and net/http that a server as fast as
// the emulator makes likely: the SDK closes a request's body as soon as the
// response's headers arrive, after which the body's WriteTo fails with
// io.EOF; when net/http's connection writer is still checking the body for
// extra bytes at that moment, it takes that for a write error and closes
// the connection under the response being read ("use of closed network
// connection", which the SDK's default retryer retries, at the cost of
// extra calls). Responses larger than the client's read buffer (4 KiB)
// fail that way.
type bodyTransport struct{ http.RoundTripper }

func (t bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req = req.Clone(req.Context())
		req.Body = struct{ io.ReadCloser }{req.Body}
	}
	return t.RoundTripper.RoundTrip(req)
}
