package aws_ecr

import (
	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

var _ module.Noticer = (*repositoryMapper)(nil)

// Noticed names the repository an ECR call created, deleted or changed
// (its tag mutability, its scan on push), by name in the event's region
// (the table's identity): CreateRepository, DeleteRepository,
// PutImageTagMutability and PutImageScanningConfiguration log
// requestParameters.repositoryName
// (https://docs.aws.amazon.com/AmazonECR/latest/userguide/logging-using-cloudtrail.html).
// Other calls (images, policies, tags) change nothing the table holds.
func (m *repositoryMapper) Noticed(ev module.Event) []string {
	if !trail.Is(ev, "ecr.amazonaws.com", "CreateRepository", "DeleteRepository", "PutImageTagMutability", "PutImageScanningConfiguration") || ev.Region == "" {
		return nil
	}
	var ids []string
	for _, name := range trail.Strings(ev.Request, "repositoryName") {
		ids = append(ids, module.CloudIDOf(repositories.Table(), module.Record{"repository_name": name, "region": ev.Region}))
	}
	return ids
}
