package server

import (
	"time"

	"github.com/perch-dev/perch/internal/store"
)

// stores is the one store seen through what each handler group needs of it.
// Every group declares its own small interface beside its handlers (scimStore
// in scim_users.go, billingStore in billing.go, …) with exactly the store
// methods it calls, and reaches storage only through its field here, so a
// reader changing a group sees the dozen methods it uses rather than the
// store's every method. A method several groups use appears in each of their
// interfaces: each says what it needs. All fields hold the same *store.Store.
type stores struct {
	kernelDB       kernelStore       // authentication, the audit log, listed admins (authn.go, audit.go, admin_roles.go)
	authDB         authStore         // auth_*.go but tokens
	tokenDB        tokenStore        // auth_tokens.go, webhook_tokens.go
	accountDB      accountStore      // account_*.go
	preferencesDB  preferencesStore  // account_preferences.go, ws.go (the preferences a socket follows)
	orgDB          orgStore          // org*.go
	webhookDB      webhookStore      // webhook_*.go
	scheduleDB     scheduleStore     // webhook_schedule.go
	scheduledDB    scheduledStore    // notification_scheduled.go
	notificationDB notificationStore // notification_*.go, ws.go (replay)
	workflowDB     workflowStore     // workflow_*.go
	deliveryDB     deliveryStore     // workflow_deliveries.go
	billingDB      billingStore      // billing*.go
	ssoDB          ssoStore          // saml*.go, sso_*.go
	scimDB         scimStore         // scim*.go
	scimGroupDB    scimGroupStore    // scim_groups.go
	adminDB        adminStore        // admin_*.go
	healthDB       healthStore       // health.go
	actionDB       actionStore       // notification_actions.go
	integrationDB  integrationStore  // org_integrations.go

	// storeNow is the store's clock (store.Store.Now, a field tests
	// replace), read at each call.
	storeNow func() time.Time
}

func newStores(st *store.Store) stores {
	return stores{
		kernelDB:       st,
		authDB:         st,
		tokenDB:        st,
		accountDB:      st,
		preferencesDB:  st,
		orgDB:          st,
		webhookDB:      st,
		scheduleDB:     st,
		scheduledDB:    st,
		notificationDB: st,
		workflowDB:     st,
		deliveryDB:     st,
		billingDB:      st,
		ssoDB:          st,
		scimDB:         st,
		scimGroupDB:    st,
		adminDB:        st,
		healthDB:       st,
		actionDB:       st,
		integrationDB:  st,
		storeNow:       func() time.Time { return st.Now() },
	}
}
