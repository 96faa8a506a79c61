package perch

// KeptMail is an e-mail the outbox keeps instead of sending it, because no
// SMTP server is configured; the operator reads it with `perch admin
// outbox`. Who it is for, its subject and its kind are in the clear, for the
// operator's list. Its link and bodies are sealed with the server's key
// (internal/mail seals and opens them), because reset, verification and
// invitation links are credentials, and whoever reads the database (a
// backup, a replica, a support dump) must not be able to take accounts over
// with them. Without a key (PostgreSQL without PERCH_SECRET_KEY) they are
// not kept at all.
type KeptMail struct {
	To      string // recipient address
	Subject string
	Kind    string // one of the Email* kinds
	// Link, Text and HTML are set only in mail kept in the clear by a Perch
	// that did not seal the outbox yet.
	Link string
	Text string
	HTML string
	// Sealed is the link and bodies, sealed; nil when withheld or kept in
	// the clear.
	Sealed []byte
	// Withheld says the link and bodies were left out: there was no key to
	// seal them with.
	Withheld bool
}
