package aws_ecr

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// pageSize is the maxResults of DescribeRepositories pages.
const pageSize = 1000

// namesPerCall is the most repositoryNames one DescribeRepositories call
// takes.
const namesPerCall = 100

// concurrency bounds the DescribeRepositories calls in flight during a Get.
const concurrency = 8

// repositoryMapper maps the repository table: the private repositories of
// every region of the cycle's scope.
type repositoryMapper struct {
	t       module.Table
	clients *regional.Clients[*ecr.Client]
}

func newRepositoryMapper(cfg aws.Config) *repositoryMapper {
	return &repositoryMapper{t: RepositoryTable(), clients: regional.NewClients(cfg, func(region string) *ecr.Client {
		return ecr.NewFromConfig(cfg, func(o *ecr.Options) { o.Region = region })
	})}
}

// Read describes the repositories of every region in the scope
// (DescribeRepositories, paginated), regions concurrently. A region whose
// read fails leaves the others' records, with a *module.PartialError
// naming it.
func (m *repositoryMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	return regional.List(ctx, m.clients, call.Scope, terminal, "describe repositories",
		func(cl *ecr.Client) *ecr.DescribeRepositoriesPaginator {
			return ecr.NewDescribeRepositoriesPaginator(cl, &ecr.DescribeRepositoriesInput{MaxResults: aws.Int32(pageSize)})
		},
		repositories, record)
}

func repositories(page *ecr.DescribeRepositoriesOutput) []types.Repository { return page.Repositories }

// named describes the named repositories of a region.
func (m *repositoryMapper) named(ctx context.Context, region string, names []string) ([]module.Record, error) {
	found, err := regional.Pages(ctx, ecr.NewDescribeRepositoriesPaginator(m.clients.Region(region), &ecr.DescribeRepositoriesInput{RepositoryNames: names}), repositories)
	if err != nil {
		return nil, terminal.Classify(err, "describe repositories in %s", region)
	}
	out := make([]module.Record, len(found))
	for i, r := range found {
		out[i] = record(region, r)
	}
	return out, nil
}

// Get reads the repositories ids name (["name","region"], as
// module.CloudIDOf renders the table's identity), as Read would: only in
// the regions of the cycle's scope (one elsewhere, or an id no record
// could have, is absent), by DescribeRepositories with repositoryNames in
// each region, up to 100 names a call. ECR fails the whole call with
// RepositoryNotFoundException when any one of the names does not exist;
// the names of such a call are then described one per call, and one not
// found is absent. ECR keeps no detail to reuse: every Get is fresh. (API
// Reference, DescribeRepositories:
// https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DescribeRepositories.html;
// maxResults and nextToken cannot be used with repositoryNames.)
func (m *repositoryMapper) Get(ctx context.Context, call module.Call, ids []string) ([]module.Record, error) {
	regions := m.clients.Scope(call.Scope).Regions
	type batch struct {
		region string
		names  []string
	}
	var calls []batch
	byRegion := map[string]int{} // the call that takes a region's next names
	for _, id := range ids {
		key, ok := module.IdentityOf(m.t, id)
		if !ok {
			continue
		}
		region, name := key.String("region"), key.String("repository_name")
		if name == "" || !slices.Contains(regions, region) {
			continue
		}
		i, ok := byRegion[region]
		if !ok || len(calls[i].names) == namesPerCall {
			i = len(calls)
			byRegion[region] = i
			calls = append(calls, batch{region: region})
		}
		calls[i].names = append(calls[i].names, name)
	}
	return regional.Gather(ctx, concurrency, len(calls), func(ctx context.Context, i int) ([]module.Record, error) {
		return m.describe(ctx, calls[i].region, calls[i].names)
	})
}

// describe describes the named repositories of a region, those that
// exist: all in one call, or one per call when one of them is not found.
func (m *repositoryMapper) describe(ctx context.Context, region string, names []string) ([]module.Record, error) {
	recs, err := m.named(ctx, region, names)
	switch {
	case !module.IsCode(err, "RepositoryNotFoundException"):
		return recs, err
	case len(names) == 1:
		return nil, nil
	}
	return regional.Gather(ctx, concurrency, len(names), func(ctx context.Context, i int) ([]module.Record, error) {
		return m.describe(ctx, region, names[i:i+1])
	})
}

func record(region string, r types.Repository) module.Record {
	scan := false
	if r.ImageScanningConfiguration != nil {
		scan = r.ImageScanningConfiguration.ScanOnPush
	}
	return module.Record{
		"repository_name":      aws.ToString(r.RepositoryName),
		"region":               region,
		"image_tag_mutability": string(r.ImageTagMutability),
		"scan_on_push":         scan,
		"repository_arn":       aws.ToString(r.RepositoryArn),
		"repository_uri":       aws.ToString(r.RepositoryUri),
		"registry_id":          aws.ToString(r.RegistryId),
		"created_at":           module.Time(aws.ToTime(r.CreatedAt)),
	}
}

// readOne reads one repository back.
func (m *repositoryMapper) readOne(ctx context.Context, region, name string) (module.Record, error) {
	recs, err := m.named(ctx, region, []string{name})
	if err != nil {
		return nil, err
	}
	if len(recs) != 1 {
		return nil, fmt.Errorf("describe repository %s in %s: %d repositories", name, region, len(recs))
	}
	return recs[0], nil
}

func mutability(r module.Record) types.ImageTagMutability {
	if s := r.String("image_tag_mutability"); s != "" {
		return types.ImageTagMutability(s)
	}
	return types.ImageTagMutabilityMutable
}

// Create creates the repository in its region and returns it. A
// repository of that name that already exists there is read back as it
// is (the engine then updates it to the row).
func (m *repositoryMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	name, region := want.String("repository_name"), m.clients.RegionOr(call.Scope, want.String("region"))
	if name == "" {
		return nil, &module.TerminalError{Err: errors.New("create repository: repository_name is required")}
	}
	out, err := m.clients.Region(region).CreateRepository(ctx, &ecr.CreateRepositoryInput{
		RepositoryName:             aws.String(name),
		ImageTagMutability:         mutability(want),
		ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: want.Bool("scan_on_push")},
	})
	switch {
	case module.IsCode(err, "RepositoryAlreadyExistsException"):
		return m.readOne(ctx, region, name)
	case err != nil:
		return nil, terminal.Classify(err, "create repository %s in %s", name, region)
	}
	return record(region, *out.Repository), nil
}

// Update changes tag mutability (PutImageTagMutability) and scanning
// (PutImageScanningConfiguration); another name or region needs a new
// repository.
func (m *repositoryMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	name, region := have.String("repository_name"), m.clients.RegionOr(call.Scope, have.String("region"))
	if want.String("repository_name") != name || m.clients.RegionOr(call.Scope, want.String("region")) != region {
		return nil, module.ErrReplace
	}
	cl := m.clients.Region(region)
	if mutability(want) != mutability(have) {
		_, err := cl.PutImageTagMutability(ctx, &ecr.PutImageTagMutabilityInput{RepositoryName: aws.String(name), ImageTagMutability: mutability(want)})
		if err != nil {
			return nil, terminal.Classify(err, "set image tag mutability of repository %s in %s", name, region)
		}
	}
	if want.Bool("scan_on_push") != have.Bool("scan_on_push") {
		_, err := cl.PutImageScanningConfiguration(ctx, &ecr.PutImageScanningConfigurationInput{RepositoryName: aws.String(name),
			ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: want.Bool("scan_on_push")}})
		if err != nil {
			return nil, terminal.Classify(err, "set scan on push of repository %s in %s", name, region)
		}
	}
	return m.readOne(ctx, region, name)
}

// Delete deletes the repository. One that still holds images is not
// deleted (RepositoryNotEmptyException, reported, not retried): images are
// not the table's to throw away. A repository already gone
// (RepositoryNotFoundException) is no error. (API Reference,
// DeleteRepository:
// https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_DeleteRepository.html)
func (m *repositoryMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	name, region := have.String("repository_name"), m.clients.RegionOr(call.Scope, have.String("region"))
	_, err := m.clients.Region(region).DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String(name)})
	return terminal.Classify(module.Deleted(err, "RepositoryNotFoundException"), "delete repository %s in %s", name, region)
}

// Equal compares name, region, tag mutability (NULL is MUTABLE, as a
// cloud that leaves it out means) and scan on push (NULL is off): by
// meaning, which module.Same per column would not.
func (m *repositoryMapper) Equal(db, cloud module.Record) bool {
	return db.String("repository_name") == cloud.String("repository_name") &&
		db.String("region") == cloud.String("region") &&
		mutability(db) == mutability(cloud) &&
		db.Bool("scan_on_push") == cloud.Bool("scan_on_push")
}
