package schema

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/iasql/iasql/modules/module"
)

// ErrNoSuchType is wrapped by Describe for a type DescribeType does not
// know (TypeNotFoundException).
var ErrNoSuchType = errors.New("no such resource type in this account and region")

// Describe fetches a resource type's schema with
// cloudformation:DescribeType (Type RESOURCE) and parses it. It refuses, in
// one line, an unknown type and one that is not provisionable
// (ProvisioningType NON_PROVISIONABLE, or no create, read or delete
// handler in the schema). The caller stores the returned Raw schema, so a
// reinstall, a preview and an upgrade use the same one.
func Describe(ctx context.Context, client *cloudformation.Client, typeName string) (*Type, error) {
	out, err := client.DescribeType(ctx, &cloudformation.DescribeTypeInput{Type: cfntypes.RegistryTypeResource, TypeName: aws.String(typeName)})
	if module.IsCode(err, "TypeNotFoundException") {
		return nil, fmt.Errorf("%s: %w", typeName, ErrNoSuchType)
	}
	if err != nil {
		return nil, fmt.Errorf("describe type %s: %w", typeName, err)
	}
	if err := CheckProvisioning(typeName, string(out.ProvisioningType)); err != nil {
		return nil, err
	}
	return Parse([]byte(aws.ToString(out.Schema)))
}
