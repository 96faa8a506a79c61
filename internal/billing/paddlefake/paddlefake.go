// Package paddlefake is an httptest fake of the Paddle Billing endpoints
// Perch calls: creating a transaction (POST /transactions), creating a
// customer portal session (POST /customers/{customer_id}/portal-sessions),
// and getting and updating a subscription (GET and PATCH
// /subscriptions/{subscription_id}, the latter for its items' quantities;
// subscriptions are made by AddSubscription, as a completed checkout would).
// Its answers are shaped as Paddle's API reference shows them: a success is
// {"data": {...}, "meta": {"request_id": "…"}}, a failure {"error": {"type",
// "code", "detail", "documentation_url"[, "errors"]}, "meta": {...}} with the
// status and code Paddle documents for it; ids are Paddle's (txn_01…,
// ctm_01…, cpls_01…). It records what it was sent for tests to inspect.
package paddlefake

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// CheckoutURL is the default payment link the fake's account has: a
// transaction's checkout.url is this with ?_ptxn= and the transaction id.
const CheckoutURL = "https://buy.paddle.test/checkout"

// PortalURL is where the fake's customer portal links point.
const PortalURL = "https://customer-portal.paddle.test"

// maxBody bounds a request body; Perch's requests are a few hundred bytes.
const maxBody = 1 << 20

// Item is a line of a transaction: a catalog price and its quantity.
type Item struct {
	PriceID  string
	Quantity int
}

// Transaction is a transaction the fake created, as it was asked for.
type Transaction struct {
	ID             string
	Status         string // draft, or ready with a customer and an address
	Items          []Item
	CustomerID     string
	CustomData     map[string]any
	CollectionMode string
	CheckoutURL    string
}

// PortalSession is a customer portal session the fake created.
type PortalSession struct {
	ID              string
	CustomerID      string
	SubscriptionIDs []string
	OverviewURL     string
}

// Server is a running fake of Paddle's API for one API key and a catalog of
// price ids.
type Server struct {
	srv    *httptest.Server
	key    string
	prices map[string]bool

	mu       sync.Mutex
	txns     []Transaction
	sessions []PortalSession
	subs     map[string]*Subscription
	updates  []SubscriptionUpdate
	fail     *apiError // the next authenticated request's answer, if set
}

// Start runs a fake that accepts "Bearer apiKey" and knows the given price
// ids; it stops when tb's test ends.
func Start(tb testing.TB, apiKey string, prices ...string) *Server {
	tb.Helper()
	s := &Server{key: apiKey, prices: map[string]bool{}, subs: map[string]*Subscription{}}
	for _, p := range prices {
		s.prices[p] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /transactions", s.createTransaction)
	mux.HandleFunc("POST /customers/{customer_id}/portal-sessions", s.createPortalSession)
	mux.HandleFunc("GET /subscriptions/{subscription_id}", s.getSubscription)
	mux.HandleFunc("PATCH /subscriptions/{subscription_id}", s.updateSubscription)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found",
			detail: fmt.Sprintf("paddlefake does not serve %s %s.", r.Method, r.URL.Path)})
	})
	s.srv = httptest.NewServer(s.guard(mux))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL answers the fake's base URL, to give as the API URL.
func (s *Server) URL() string { return s.srv.URL }

// Transactions answers the transactions created so far, oldest first.
func (s *Server) Transactions() []Transaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Transaction, len(s.txns))
	copy(out, s.txns)
	return out
}

// PortalSessions answers the customer portal sessions created so far,
// oldest first.
func (s *Server) PortalSessions() []PortalSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PortalSession, len(s.sessions))
	copy(out, s.sessions)
	return out
}

// FailNext makes the next request that passes authentication fail with
// status, in Paddle's error shape with the given code and detail.
func (s *Server) FailNext(status int, code, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = &apiError{status: status, code: code, detail: detail}
}

// guard checks the API key as Paddle does (403 for a missing, malformed or
// wrong key), then answers a failure set by FailNext, then the JSON body's
// type and size.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token, bearer := strings.CutPrefix(auth, "Bearer ")
		switch {
		case auth == "":
			writeError(w, &apiError{status: http.StatusForbidden, code: "authentication_missing", detail: "Authentication header missing."})
			return
		case !bearer || token == "":
			writeError(w, &apiError{status: http.StatusForbidden, code: "authentication_malformed", detail: "Authentication header included, but incorrectly formatted."})
			return
		case subtle.ConstantTimeCompare([]byte(token), []byte(s.key)) != 1:
			writeError(w, &apiError{status: http.StatusForbidden, code: "invalid_token", detail: "Invalid or revoked API key."})
			return
		}
		s.mu.Lock()
		fail := s.fail
		s.fail = nil
		s.mu.Unlock()
		if fail != nil {
			writeError(w, fail)
			return
		}
		if r.Method == http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeError(w, &apiError{status: http.StatusBadRequest, code: "bad_request", detail: "Invalid request."})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		next.ServeHTTP(w, r)
	})
}

var (
	customerIDPattern     = regexp.MustCompile(`^ctm_[a-z\d]{26}$`)
	subscriptionIDPattern = regexp.MustCompile(`^sub_[a-z\d]{26}$`)
	addressIDPattern      = regexp.MustCompile(`^add_[a-z\d]{26}$`)
)

// transactionRequest is the body of POST /transactions: the members Perch
// sends, and the other documented ones, accepted as they come.
type transactionRequest struct {
	Items []struct {
		PriceID  *string         `json:"price_id"`
		Price    json.RawMessage `json:"price"`
		Quantity *int            `json:"quantity"`
	} `json:"items"`
	Status         *string         `json:"status"`
	CustomerID     *string         `json:"customer_id"`
	AddressID      *string         `json:"address_id"`
	BusinessID     *string         `json:"business_id"`
	CustomData     json.RawMessage `json:"custom_data"`
	CurrencyCode   *string         `json:"currency_code"`
	CollectionMode *string         `json:"collection_mode"`
	DiscountID     *string         `json:"discount_id"`
	BillingDetails json.RawMessage `json:"billing_details"`
	BillingPeriod  json.RawMessage `json:"billing_period"`
	Checkout       json.RawMessage `json:"checkout"`
}

func (s *Server) createTransaction(w http.ResponseWriter, r *http.Request) {
	var in transactionRequest
	if err := decode(r, &in); err != nil {
		writeError(w, err)
		return
	}
	var fields []fieldError
	if len(in.Items) == 0 {
		fields = append(fields, fieldError{"items", "must be provided as part of the request"})
	}
	var items []Item
	var unknown []string
	for i, it := range in.Items {
		switch {
		case it.PriceID == nil && it.Price == nil:
			fields = append(fields, fieldError{fmt.Sprintf("items[%d]", i), "price_id or price must be provided"})
			continue
		case it.PriceID == nil:
			fields = append(fields, fieldError{fmt.Sprintf("items[%d].price", i), "paddlefake only knows catalog prices"})
			continue
		case it.Quantity == nil:
			fields = append(fields, fieldError{fmt.Sprintf("items[%d].quantity", i), "must be provided as part of the request"})
		case *it.Quantity < 1:
			fields = append(fields, fieldError{fmt.Sprintf("items[%d].quantity", i), "must be greater than or equal to 1"})
		}
		if !s.prices[*it.PriceID] {
			unknown = append(unknown, *it.PriceID)
		}
		if it.Quantity != nil {
			items = append(items, Item{PriceID: *it.PriceID, Quantity: *it.Quantity})
		}
	}
	mode := "automatic"
	if in.CollectionMode != nil {
		mode = *in.CollectionMode
		if mode != "automatic" && mode != "manual" {
			fields = append(fields, fieldError{"collection_mode", "must be one of automatic, manual"})
		}
	}
	if in.CustomerID != nil && !customerIDPattern.MatchString(*in.CustomerID) {
		fields = append(fields, fieldError{"customer_id", "does not match pattern ^ctm_[a-z\\d]{26}$"})
	}
	if in.AddressID != nil && !addressIDPattern.MatchString(*in.AddressID) {
		fields = append(fields, fieldError{"address_id", "does not match pattern ^add_[a-z\\d]{26}$"})
	}
	var customData map[string]any
	if len(in.CustomData) > 0 && string(in.CustomData) != "null" {
		if err := json.Unmarshal(in.CustomData, &customData); err != nil {
			fields = append(fields, fieldError{"custom_data", "must be an object"})
		}
	}
	if len(fields) > 0 {
		writeError(w, invalidFields(fields))
		return
	}
	if len(unknown) > 0 {
		writeError(w, &apiError{status: http.StatusBadRequest, code: "transaction_price_not_found", docs: "transactions",
			detail: "One or more provided price_ids could not be found, provided: " + strings.Join(unknown, ", ")})
		return
	}

	txn := Transaction{ID: newID("txn"), Status: "draft", Items: items, CustomData: customData, CollectionMode: mode}
	if in.CustomerID != nil {
		txn.CustomerID = *in.CustomerID
	}
	if txn.CustomerID != "" && in.AddressID != nil {
		txn.Status = "ready"
	}
	if mode == "automatic" {
		txn.CheckoutURL = CheckoutURL + "?_ptxn=" + txn.ID
	}
	s.mu.Lock()
	s.txns = append(s.txns, txn)
	s.mu.Unlock()

	now := time.Now().UTC().Format(time.RFC3339Nano)
	lines := make([]map[string]any, len(items))
	for i, it := range items {
		lines[i] = map[string]any{
			"price_id": it.PriceID,
			"price":    map[string]any{"id": it.PriceID, "status": "active"},
			"quantity": it.Quantity,
		}
	}
	var checkout any
	if txn.CheckoutURL != "" {
		checkout = map[string]any{"url": txn.CheckoutURL}
	}
	writeData(w, http.StatusCreated, map[string]any{
		"id":              txn.ID,
		"status":          txn.Status,
		"customer_id":     nullable(txn.CustomerID),
		"address_id":      nullable(deref(in.AddressID)),
		"business_id":     nullable(deref(in.BusinessID)),
		"custom_data":     customData,
		"origin":          "api",
		"collection_mode": mode,
		"subscription_id": nil,
		"invoice_id":      nil,
		"invoice_number":  nil,
		"billing_details": nil,
		"billing_period":  nil,
		"currency_code":   "USD",
		"discount_id":     nullable(deref(in.DiscountID)),
		"created_at":      now,
		"updated_at":      now,
		"billed_at":       nil,
		"items":           lines,
		"checkout":        checkout,
	})
}

func (s *Server) createPortalSession(w http.ResponseWriter, r *http.Request) {
	customer := r.PathValue("customer_id")
	if !customerIDPattern.MatchString(customer) {
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", detail: fmt.Sprintf("Customer %s not found.", customer)})
		return
	}
	var in struct {
		SubscriptionIDs []string `json:"subscription_ids"`
	}
	if err := decode(r, &in); err != nil {
		writeError(w, err)
		return
	}
	var fields []fieldError
	if len(in.SubscriptionIDs) > 25 {
		fields = append(fields, fieldError{"subscription_ids", "maximum of 25 items exceeded"})
	}
	seen := map[string]bool{}
	for i, id := range in.SubscriptionIDs {
		if !subscriptionIDPattern.MatchString(id) {
			fields = append(fields, fieldError{fmt.Sprintf("subscription_ids[%d]", i), "does not match pattern ^sub_[a-z\\d]{26}$"})
		}
		if seen[id] {
			fields = append(fields, fieldError{"subscription_ids", "items must be unique"})
		}
		seen[id] = true
	}
	if len(fields) > 0 {
		writeError(w, invalidFields(fields))
		return
	}

	id := newID("cpls")
	link := func(action string, extra string) string {
		return fmt.Sprintf("%s/%s?action=%s%s&token=pga_%s", PortalURL, strings.Replace(id, "cpls_", "cpl_", 1), action, extra, randomID(32))
	}
	session := PortalSession{ID: id, CustomerID: customer, SubscriptionIDs: in.SubscriptionIDs, OverviewURL: link("overview", "")}
	subs := make([]map[string]any, len(in.SubscriptionIDs))
	for i, sub := range in.SubscriptionIDs {
		subs[i] = map[string]any{
			"id":                                 sub,
			"cancel_subscription":                link("cancel_subscription", "&subscription_id="+sub),
			"update_subscription_payment_method": link("update_subscription_payment_method", "&subscription_id="+sub),
		}
	}
	s.mu.Lock()
	s.sessions = append(s.sessions, session)
	s.mu.Unlock()
	writeData(w, http.StatusCreated, map[string]any{
		"id":          id,
		"customer_id": customer,
		"urls": map[string]any{
			"general":       map[string]any{"overview": session.OverviewURL},
			"subscriptions": subs,
		},
		"created_at": time.Now().UTC().Format(time.RFC3339Nano),
	})
}

// decode reads a JSON object body, refusing members Paddle does not
// document for the operation (a misspelt member would be silently lost).
func decode(r *http.Request, v any) *apiError {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: http.StatusRequestEntityTooLarge, code: "bad_request", detail: "Request body too large."}
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return invalidFields([]fieldError{{strings.Trim(name, `"`), "is not a known field"}})
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return invalidFields([]fieldError{{ute.Field, "must be of type " + ute.Type.String()}})
		}
		return &apiError{status: http.StatusBadRequest, code: "invalid_json", detail: "Invalid JSON in your request."}
	}
	if dec.More() {
		return &apiError{status: http.StatusBadRequest, code: "invalid_json", detail: "Invalid JSON in your request."}
	}
	return nil
}

// apiError is a failed answer in Paddle's shape.
type apiError struct {
	status int
	code   string
	detail string
	docs   string // the section of Paddle's error reference: shared unless said
	fields []fieldError
}

type fieldError struct{ field, message string }

func invalidFields(fields []fieldError) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_field", detail: "Request does not pass validation.", fields: fields}
}

func writeError(w http.ResponseWriter, e *apiError) {
	docs := e.docs
	if docs == "" {
		docs = "shared"
	}
	body := map[string]any{
		"type":              "request_error",
		"code":              e.code,
		"detail":            e.detail,
		"documentation_url": "https://developer.paddle.com/errors/" + docs + "/" + e.code,
	}
	if e.status >= 500 {
		body["type"] = "api_error"
	}
	if len(e.fields) > 0 {
		list := make([]map[string]string, len(e.fields))
		for i, f := range e.fields {
			list[i] = map[string]string{"field": f.field, "message": f.message}
		}
		body["errors"] = list
	}
	writeJSON(w, e.status, map[string]any{"error": body, "meta": map[string]any{"request_id": requestID()}})
}

func writeData(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, map[string]any{"data": data, "meta": map[string]any{"request_id": requestID()}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// newID answers a Paddle id: the prefix, "_", and 26 lower-case
// alphanumerics starting "01" as Paddle's do.
func newID(prefix string) string { return prefix + "_01" + randomID(24) }

const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
