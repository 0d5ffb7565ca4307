package emulator

import (
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
	}
}
