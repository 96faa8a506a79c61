package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/perch-dev/perch"
)

// paddleAPIURL is Paddle Billing's live API; the sandbox is
// https://sandbox-api.paddle.com.
const paddleAPIURL = "https://api.paddle.com"

// maxPaddleResponse bounds what is read of a Paddle response: its entities
// are a few kilobytes.
const maxPaddleResponse = 1 << 20

// paddleProvider creates Paddle transactions and customer portal sessions
// with plain net/http.
type paddleProvider struct {
	apiURL string
	key    string
	prices Prices
	hc     *http.Client
}

// NewPaddle talks to Paddle Billing's API at apiURL ("" is https://api.paddle.com)
// with plain net/http and Bearer apiKey, over hc (nil: a client with a
// 10-second timeout).
func NewPaddle(apiKey, apiURL string, prices Prices, hc *http.Client) Provider {
	if apiURL == "" {
		apiURL = paddleAPIURL
	}
	return &paddleProvider{
		apiURL: strings.TrimRight(apiURL, "/"),
		key:    apiKey,
		prices: prices.clone(),
		hc:     httpClient(hc),
	}
}

// Name answers perch.BillingPaddle.
func (p *paddleProvider) Name() string { return perch.BillingPaddle }

// PlanOf maps a Paddle price id to its plan slug.
func (p *paddleProvider) PlanOf(priceID string) string { return p.prices.planOf(priceID) }

// paddleItem is a line of a transaction: a catalog price and its quantity.
type paddleItem struct {
	PriceID  string `json:"price_id"`
	Quantity int    `json:"quantity"`
}

// paddleTransactionRequest is the body of POST /transactions.
type paddleTransactionRequest struct {
	Items          []paddleItem      `json:"items"`
	CustomData     map[string]string `json:"custom_data"`
	CustomerID     string            `json:"customer_id,omitempty"`
	CollectionMode string            `json:"collection_mode"`
}

// Checkout creates an automatically-collected transaction for the plan's
// price, with the organisation in custom_data (Paddle copies it to the
// subscription the transaction creates), and answers the transaction's id
// and checkout URL: the account's default payment link with ?_ptxn=, where
// Paddle.js opens the checkout. Paddle takes no buyer's address or return
// URLs on a transaction, so Email, SuccessURL and CancelURL are not sent;
// the customer is, when the organisation has one.
func (p *paddleProvider) Checkout(ctx context.Context, c CheckoutRequest) (*Checkout, error) {
	if err := checkRequest(c); err != nil {
		return nil, err
	}
	price, err := p.prices.price(c.Plan)
	if err != nil {
		return nil, err
	}
	body := paddleTransactionRequest{
		Items:          []paddleItem{{PriceID: price, Quantity: quantity(c.Seats)}},
		CustomData:     map[string]string{"org_id": c.OrgID, "plan": c.Plan},
		CustomerID:     c.CustomerID,
		CollectionMode: "automatic",
	}
	var txn struct {
		ID       string `json:"id"`
		Checkout *struct {
			URL string `json:"url"`
		} `json:"checkout"`
	}
	if err := p.post(ctx, "create transaction", "/transactions", body, &txn); err != nil {
		return nil, err
	}
	if txn.ID == "" {
		return nil, errors.New("paddle: the transaction created has no id")
	}
	if txn.Checkout == nil || txn.Checkout.URL == "" {
		return nil, fmt.Errorf("paddle: transaction %s has no checkout URL (is a default payment link set in Paddle's checkout settings?)", txn.ID)
	}
	return &Checkout{ID: txn.ID, URL: txn.Checkout.URL}, nil
}

// Portal creates a customer portal session for the customer and answers
// the authenticated link to the portal's overview. A subscription id, when
// given, is sent so that the session carries that subscription's deep links
// too. Paddle's portal has no way back to the app, so returnURL is not sent.
func (p *paddleProvider) Portal(ctx context.Context, customerID, subscriptionID, returnURL string) (string, error) {
	if customerID == "" {
		return "", errors.New("billing: the organisation has no Paddle customer to open the portal for")
	}
	body := map[string][]string{}
	if subscriptionID != "" {
		body["subscription_ids"] = []string{subscriptionID}
	}
	var session struct {
		ID   string `json:"id"`
		URLs struct {
			General struct {
				Overview string `json:"overview"`
			} `json:"general"`
		} `json:"urls"`
	}
	path := "/customers/" + url.PathEscape(customerID) + "/portal-sessions"
	if err := p.post(ctx, "create customer portal session", path, body, &session); err != nil {
		return "", err
	}
	if session.URLs.General.Overview == "" {
		return "", fmt.Errorf("paddle: customer portal session %s has no overview URL", session.ID)
	}
	return session.URLs.General.Overview, nil
}

// paddleError is the error object of Paddle's failed responses.
type paddleError struct {
	Error *struct {
		Type             string `json:"type"`
		Code             string `json:"code"`
		Detail           string `json:"detail"`
		DocumentationURL string `json:"documentation_url"`
		Errors           []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"error"`
	Meta struct {
		RequestID string `json:"request_id"`
	} `json:"meta"`
}

// paddleSubscriptionUpdate is the body of PATCH /subscriptions/{id} that
// sets items: Paddle replaces the subscription's items with the list, so
// every item is sent, and an items change needs a proration mode.
type paddleSubscriptionUpdate struct {
	Items                []paddleItem `json:"items"`
	ProrationBillingMode string       `json:"proration_billing_mode"`
}

// paddleProration is how a seat change is billed: prorated to the minute
// and charged (or credited) at once, as Paddle's proration guide shows for
// a change of quantity.
const paddleProration = "prorated_immediately"

// SetSeats reads the subscription (GET /subscriptions/{id}) and, when its
// plan item's quantity is not seats, sends every item back with that
// quantity changed (PATCH, proration_billing_mode prorated_immediately).
func (p *paddleProvider) SetSeats(ctx context.Context, subscriptionID string, seats int) (int, error) {
	if subscriptionID == "" {
		return 0, errors.New("billing: no Paddle subscription to set the seats of")
	}
	var sub struct {
		ID    string `json:"id"`
		Items []struct {
			Quantity int `json:"quantity"`
			Price    struct {
				ID string `json:"id"`
			} `json:"price"`
		} `json:"items"`
	}
	path := "/subscriptions/" + url.PathEscape(subscriptionID)
	if err := p.call(ctx, http.MethodGet, "get subscription", path, nil, &sub); err != nil {
		return 0, err
	}
	plan := -1
	for i, it := range sub.Items {
		if p.PlanOf(it.Price.ID) != "" || len(sub.Items) == 1 {
			plan = i
		}
	}
	if plan < 0 {
		return 0, fmt.Errorf("paddle: subscription %s has no item of a Perch plan's price", subscriptionID)
	}
	before := sub.Items[plan].Quantity
	if before == quantity(seats) {
		return before, nil
	}
	body := paddleSubscriptionUpdate{ProrationBillingMode: paddleProration}
	for i, it := range sub.Items {
		item := paddleItem{PriceID: it.Price.ID, Quantity: it.Quantity}
		if i == plan {
			item.Quantity = quantity(seats)
		}
		body.Items = append(body.Items, item)
	}
	if err := p.call(ctx, http.MethodPatch, "update subscription", path, body, &sub); err != nil {
		return before, err
	}
	return before, nil
}

// post sends body as JSON to the API path and decodes the response's data
// into out (call).
func (p *paddleProvider) post(ctx context.Context, op, path string, body, out any) error {
	return p.call(ctx, http.MethodPost, op, path, body, out)
}

// call sends body (nil: none) as JSON to the API path with method and
// decodes the response's data into out. A failure is an error that starts
// "paddle: ": Paddle's own code and detail when it answered with its error
// object.
func (p *paddleProvider) call(ctx context.Context, method, op, path string, body, out any) error {
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("paddle: %s: encoding the request: %w", op, err)
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.apiURL+path, reader)
	if err != nil {
		return fmt.Errorf("paddle: %s: %w", op, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Paddle-Version", "1")
	resp, err := p.hc.Do(req)
	if err != nil {
		return &providerError{msg: redact(fmt.Sprintf("paddle: %s: %v", op, err), p.key), err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxPaddleResponse+1))
	if err != nil {
		return &providerError{msg: redact(fmt.Sprintf("paddle: %s: reading the response: %v", op, err), p.key), err: err}
	}
	if len(data) > maxPaddleResponse {
		return fmt.Errorf("paddle: %s: the response is larger than %d bytes", op, maxPaddleResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return p.failure(resp.StatusCode, data)
	}
	var envelope struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(data, &envelope); err != nil || len(envelope.Data) == 0 || string(envelope.Data) == "null" {
		return fmt.Errorf("paddle: %s: the response (%s) has no data object", op, resp.Status)
	}
	if err := json.Unmarshal(envelope.Data, out); err != nil {
		return fmt.Errorf("paddle: %s: reading the response's data: %w", op, err)
	}
	return nil
}

// failure turns a failed response into "paddle: <code>: <detail>", with the
// fields a validation error names and the request id Paddle's support asks
// for. A response without Paddle's error object (a proxy's page) is named
// by its status alone.
func (p *paddleProvider) failure(status int, data []byte) error {
	var pe paddleError
	if err := json.Unmarshal(data, &pe); err != nil || pe.Error == nil || pe.Error.Code == "" {
		return fmt.Errorf("paddle: unexpected response %d %s", status, http.StatusText(status))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "paddle: %s: %s", pe.Error.Code, pe.Error.Detail)
	for _, f := range pe.Error.Errors {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Message)
	}
	if pe.Meta.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", pe.Meta.RequestID)
	}
	return errors.New(redact(b.String(), p.key))
}
