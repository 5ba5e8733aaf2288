package cli

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"nimbus/app/kernel/objstore"
)

// closedPorts are the TCP ports of the servers Nimbus uses that its engine must never reach:
// an external database's and the object store's. The engine is kept to its provider's ports
// and to the range its own processes listen in; these matter where they fall in that range.
func closedPorts(cfg *config) []uint16 {
	var ports []uint16
	if cfg.DatabaseURL != "" {
		if pc, err := pgconn.ParseConfig(cfg.DatabaseURL); err == nil {
			ports = append(ports, pc.Port)
			for _, f := range pc.Fallbacks {
				ports = append(ports, f.Port)
			}
		}
	}
	if cfg.S3.Endpoint != "" {
		// Without a port it is 80 or 443, outside that range: a provider may need 443.
		if u, err := objstore.ParseEndpoint(cfg.S3.Endpoint); err == nil && u.Port() != "" {
			if n, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
				ports = append(ports, uint16(n))
			}
		}
	}
	return ports
}
