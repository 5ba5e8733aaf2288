package proxmox

import "nimbus/app/platform/pulumix"

// How the engine's default Proxmox provider is given its API: the variables it reads when the
// program declares no provider of its own (the validator refuses one). They are never
// settings: the engine hands a provider its settings in its environment, in the clear
// (PULUMI_CONFIG), and the state or a saved plan would keep them.
const (
	endpointVariable = "PROXMOX_VE_ENDPOINT"
	tokenVariable    = "PROXMOX_VE_API_TOKEN" // id=secret
	// insecureVariable is set false so that the API's certificate is always checked.
	insecureVariable = "PROXMOX_VE_INSECURE"
	// caFile names the file of the certificate authorities the engine trusts, for an API whose
	// certificate the system's roots do not: the provider has no setting of its own for one,
	// and as a Go program it trusts the certificates of the file this variable names instead.
	caFile = "SSL_CERT_FILE"
)

// Give hands the credentials to a stack's engine, a deploy's or a check's: the API's port as
// the one its sandbox opens, the token in its environment alone, the certificate authority as
// a file of the run's own, and the secret as a value its output never shows.
func (c Credentials) Give(st *pulumix.Stack) error {
	port, err := c.Port()
	if err != nil {
		return err
	}
	st.Ports, st.Hidden = []uint16{port}, []string{c.Secret}
	st.Env = map[string]string{endpointVariable: c.Endpoint, tokenVariable: c.Token(), insecureVariable: "false"}
	if c.CACert != "" {
		st.Files = map[string][]byte{caFile: []byte(c.CACert)}
	}
	return nil
}
