package aws_s3

import (
	"strings"

	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

var _ module.Noticer = (*bucketMapper)(nil)

// Noticed names the bucket an S3 management event created, deleted or
// changed the versioning of, by name (the table's identity): CloudTrail
// logs bucket-level calls as management events with
// requestParameters.bucketName, and the bucket's ARN
// (arn:aws:s3:::NAME) in resources
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/cloudtrail-logging-understanding-s3-entries.html,
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/cloudtrail-logging-s3-info.html).
// Other bucket calls (tags, policy, ACL) change nothing the table holds.
//
// bucket_object notices nothing: object-level calls (PutObject,
// DeleteObject, CopyObject) are CloudTrail data events, which a trail
// logs only when asked to, at a cost; its rows follow the periodic read.
func (m *bucketMapper) Noticed(ev module.Event) []string {
	if !trail.Is(ev, "s3.amazonaws.com", "CreateBucket", "DeleteBucket", "PutBucketVersioning") {
		return nil
	}
	if name := trail.String(ev.Request, "bucketName"); name != "" {
		return []string{name}
	}
	var names []string
	for _, res := range ev.Resources {
		if a, ok := trail.ParseARN(res); ok && a.Service == "s3" && a.Region == "" && a.Account == "" && !strings.Contains(a.Resource, "/") {
			names = append(names, a.Resource)
		}
	}
	return trail.Unique(names)
}
