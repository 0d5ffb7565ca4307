package aws_s3

import (
	"testing"

	"github.com/iasql/iasql/modules/internal/trail/trailtest"
)

// TestBucketNoticed: the bucket an S3 management event names, from
// records shaped as AWS logs them
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/cloudtrail-logging-understanding-s3-entries.html);
// calls that change nothing the table holds, object data events and
// other services' calls name none.
func TestBucketNoticed(t *testing.T) {
	trailtest.Run(t, &bucketMapper{}, []trailtest.Case{
		{"CreateBucket", `{"eventSource":"s3.amazonaws.com","eventName":"CreateBucket","awsRegion":"eu-west-1",
			"requestParameters":{"CreateBucketConfiguration":{"LocationConstraint":"eu-west-1","xmlns":"http://s3.amazonaws.com/doc/2006-03-01/"},
				"bucketName":"amzn-s3-demo-bucket","Host":"amzn-s3-demo-bucket.s3.eu-west-1.amazonaws.com"},
			"responseElements":null,
			"resources":[{"type":"AWS::S3::Bucket","ARN":"arn:aws:s3:::amzn-s3-demo-bucket","accountId":"111122223333"}]}`,
			[]string{"amzn-s3-demo-bucket"}},
		{"DeleteBucket", `{"eventSource":"s3.amazonaws.com","eventName":"DeleteBucket","awsRegion":"us-east-1",
			"requestParameters":{"bucketName":"amzn-s3-demo-bucket","Host":"s3.amazonaws.com"},"responseElements":null,
			"resources":[{"type":"AWS::S3::Bucket","ARN":"arn:aws:s3:::amzn-s3-demo-bucket","accountId":"111122223333"}]}`,
			[]string{"amzn-s3-demo-bucket"}},
		{"PutBucketVersioning", `{"eventSource":"s3.amazonaws.com","eventName":"PutBucketVersioning","awsRegion":"us-east-1",
			"requestParameters":{"bucketName":"amzn-s3-demo-bucket","Host":"amzn-s3-demo-bucket.s3.us-east-1.amazonaws.com","versioning":"",
				"VersioningConfiguration":{"Status":"Enabled","xmlns":"http://s3.amazonaws.com/doc/2006-03-01/"}},
			"responseElements":null,
			"resources":[{"type":"AWS::S3::Bucket","ARN":"arn:aws:s3:::amzn-s3-demo-bucket","accountId":"111122223333"}]}`,
			[]string{"amzn-s3-demo-bucket"}},
		{"DeleteBucket named by its resource alone", `{"eventSource":"s3.amazonaws.com","eventName":"DeleteBucket","awsRegion":"us-east-1",
			"resources":[{"type":"AWS::S3::Bucket","ARN":"arn:aws:s3:::amzn-s3-demo-bucket","accountId":"111122223333"}]}`,
			[]string{"amzn-s3-demo-bucket"}},
		{"PutBucketTagging", `{"eventSource":"s3.amazonaws.com","eventName":"PutBucketTagging","awsRegion":"us-east-1",
			"requestParameters":{"bucketName":"amzn-s3-demo-bucket","tagging":""}}`, nil},
		{"PutObject (a data event)", `{"eventSource":"s3.amazonaws.com","eventName":"PutObject","awsRegion":"us-east-1",
			"requestParameters":{"bucketName":"amzn-s3-demo-bucket","key":"a.txt"},
			"resources":[{"type":"AWS::S3::Object","ARN":"arn:aws:s3:::amzn-s3-demo-bucket/a.txt"},{"type":"AWS::S3::Bucket","ARN":"arn:aws:s3:::amzn-s3-demo-bucket"}]}`, nil},
		{"a directory bucket's CreateBucket", `{"eventSource":"s3express.amazonaws.com","eventName":"CreateBucket","awsRegion":"us-west-2",
			"requestParameters":{"bucketName":"bucket-base-name--usw2-az1--x-s3"}}`, nil},
		{"DeleteRepository", `{"eventSource":"ecr.amazonaws.com","eventName":"DeleteRepository","awsRegion":"us-east-1",
			"requestParameters":{"repositoryName":"amzn-s3-demo-bucket"}}`, nil},
	})
}
