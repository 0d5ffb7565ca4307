package emulator

// ReloadSchemas reads the resource schemas again, as Open did (the
// embedded ones, every *.json of Options.SchemaDir, then
// Options.CloudFormationSchemas): a type whose schema file changed since is
// served at its new version from then on, by DescribeType and by Cloud
// Control's validation, as when AWS publishes a new version of a type
// (DescribeType answers the default version's schema:
// https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeType.html).
// Resources are kept, less the properties the new schema no longer has
// (what its read handler would return). On an error nothing changes.
func (e *Emulator) ReloadSchemas() error {
	cc := e.services["cloudcontrolapi"].(*ccService)
	schemas, err := loadCFNSchemas(cc.schemaDir, cc.extraSchemas)
	if err != nil {
		return err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.schemas = schemas
	for key, store := range cc.resources {
		sc, ok := schemas[key.typeName]
		if !ok {
			continue
		}
		for _, m := range store {
			for p := range m {
				if _, ok := sc.Properties[p]; !ok {
					delete(m, p)
				}
			}
		}
	}
	return nil
}
