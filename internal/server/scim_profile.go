package server

import (
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
)

// What SCIM keeps of a User beyond the account (scim_users.go): the title
// and the enterprise extension, kept with the provider's other attributes
// and answered back; and roles, which are the account's organisation role
// (scim/roles.go has the mapping; the store refuses to demote the last
// owner; roleChanged in org.go carries out a change as the dashboard's).

// keptProfile is the enterprise extension as the store keeps it, in the
// provider's JSON.
type keptProfile struct {
	Department     string `json:"department,omitempty"`
	EmployeeNumber string `json:"employeeNumber,omitempty"`
	Manager        string `json:"manager,omitempty"`
}

// checkProfile checks the title and the enterprise attributes as Perch
// checks any single line of text, in the schema's order.
func checkProfile(u scim.User) error {
	for _, a := range [...]struct{ attr, v string }{{"title", u.Title},
		{scim.EnterpriseSchema + ":employeeNumber", u.Enterprise.EmployeeNumber},
		{scim.EnterpriseSchema + ":department", u.Enterprise.Department},
		{scim.EnterpriseSchema + ":manager", u.Enterprise.Manager}} {
		if problem := perch.TextProblem(a.v, perch.SingleLine); problem != "" {
			return scim.Errorf(http.StatusBadRequest, scim.InvalidValue, "%s %s.", a.attr, problem)
		}
	}
	return nil
}
