package aws_cloudcontrol

import (
	"log/slog"

	"github.com/iasql/iasql/modules/module"
)

// CatalogLogging is Catalog logging to l.
func CatalogLogging(l *slog.Logger) module.Catalog {
	c := Catalog().(*catalog)
	c.log = l
	return c
}
