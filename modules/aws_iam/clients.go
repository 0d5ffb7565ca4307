package aws_iam

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// iamClients is what the module's mappers call IAM with.
type iamClients struct {
	cfg     aws.Config
	clients *regional.Clients[*iam.Client]
}

func newClients(cfg aws.Config) iamClients {
	return iamClients{cfg: cfg, clients: regional.NewClients(func(region string) *iam.Client {
		return iam.NewFromConfig(cfg, func(o *iam.Options) { o.Region = region })
	})}
}

// client returns the IAM client for the default region of the cycle's
// scope. IAM is global: any region reaches the same roles and policies;
// signing for the scope's default region makes partitions other than aws
// (aws-cn, aws-us-gov) resolve to their own endpoint.
func (c iamClients) client(ctx context.Context) *iam.Client {
	return c.clients.Region(module.ScopeOf(ctx, c.cfg).Default)
}

// policyArns maps the names of the account's own policies to their ARNs
// (ListPolicies, Scope Local): a policy is known by name in the tables,
// and by ARN (which holds its path) to IAM.
func policyArns(ctx context.Context, cl *iam.Client) (map[string]string, error) {
	out := map[string]string{}
	p := iam.NewListPoliciesPaginator(cl, &iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal, MaxItems: aws.Int32(listPage)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, classify(err, "list policies")
		}
		for _, pol := range page.Policies {
			out[aws.ToString(pol.PolicyName)] = aws.ToString(pol.Arn)
		}
	}
	return out, nil
}

// optional is s for an optional parameter: nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// orNull is s as a record value: NULL when empty.
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
