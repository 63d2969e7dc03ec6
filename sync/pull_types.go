package sync

import "context"

// Bounds and defaults of Pull (rule group PULL).
const (
	// MaxPullSubscriptions bounds PullRequest.Subscriptions (PULL-1).
	MaxPullSubscriptions = 100
	// DefaultPullLimitChanges is a subscription's change limit when its
	// LimitChanges is 0 (PULL-6).
	DefaultPullLimitChanges = 1000
	// DefaultPullLimitRows is a subscription's bootstrap page size when
	// its LimitRows is 0 (PULL-3).
	DefaultPullLimitRows = 1000
	// PullBootstrap is the cursor of a subscription that has no rows yet
	// and asks for a bootstrap (PULL-3).
	PullBootstrap int64 = -1
)

// PullRequest is one client's pull (Store.Pull, rule group PULL). The zero
// value is not valid: ClientID and ActorID are required.
type PullRequest struct {
	// ClientID identifies the client (its device or installation): V-2,
	// not starting with RemoteCommandPrefix (V-7). Its record is bound to
	// the first ActorID that pulls with it, for as long as the record
	// lasts (retention deletes idle records, RET-6) (PULL-9).
	ClientID string `json:"clientId"`
	// ActorID is the authenticated user or service the host pulls for
	// (V-2). The host authorizes the subscriptions' scopes for it before
	// calling Pull: Pull reads exactly the scopes it is given.
	ActorID string `json:"-"`
	// WireVersion is stored in the client record as given (CR-1); 0 when
	// the host has none.
	WireVersion int64 `json:"wireVersion,omitempty"`
	// AtMs is the time the client record and the partition entry are
	// stamped with, epoch milliseconds (PULL-8); 0 means now.
	AtMs int64 `json:"-"`
	// Subscriptions are served in order, each independently: 0…100
	// (MaxPullSubscriptions), with distinct IDs.
	Subscriptions []PullSubscription `json:"subscriptions"`
	// RestartBootstraps opts into SSP2's self-healing bootstrap (PULL-11):
	// a subscription that cannot go on from where the client is — a
	// bootstrap token that does not verify (altered, made up, issued for
	// another partition, table or filter), a resumed pin below the
	// horizon or beyond the head, a cursor beyond the head — starts a
	// fresh bootstrap pinned at the head in this pull (its result is
	// Fresh) instead of failing the pull with CodeInvalidArgument or
	// being reset. A cursor below the horizon is still reset
	// (CodeCursorExpired). false: the engine's own semantics (PULL-2,
	// PULL-4).
	RestartBootstraps bool `json:"-"`
}

// PullSubscription is one subscription of a PullRequest: the rows of one
// table selected by a scope filter, and where the client is in them.
type PullSubscription struct {
	// ID names the subscription in the request, the response and the
	// client record (V-2); distinct within a request.
	ID string `json:"id"`
	// Table is a table of the ensured schema (SCH-8).
	Table string `json:"table"`
	// Scopes select the rows as in a window read or a scan (WIN-3, V-6):
	// at least one key; a key with an empty value list matches nothing.
	Scopes ScopeFilter `json:"scopes"`
	// Cursor is the NextCursor of the subscription's previous response:
	// ≥ 0 for an incremental pull (PULL-6), PullBootstrap (−1) for a
	// subscription without rows (PULL-3). Ignored when BootstrapToken is
	// set. Anything below −1 is CodeInvalidArgument.
	Cursor int64 `json:"cursor"`
	// BootstrapToken is the previous response's BootstrapToken, to fetch
	// the next page of a bootstrap (PULL-4); "" otherwise. It is bound to
	// the partition, Table and Scopes it was issued for.
	BootstrapToken string `json:"bootstrapToken,omitempty"`
	// LimitChanges bounds the changes of an incremental response (PULL-6):
	// 1…10,000 (V-5), 0 = DefaultPullLimitChanges.
	LimitChanges int `json:"limitChanges,omitempty"`
	// LimitRows bounds the rows of a bootstrap page (PULL-3): 1…10,000
	// (V-5), 0 = DefaultPullLimitRows.
	LimitRows int `json:"limitRows,omitempty"`
	// RecordScopes are the scopes the client record keeps for the
	// subscription (PULL-8, PULL-12): nil records Scopes. A protocol
	// layer that reads a subset the actor is granted (SSP2's effective
	// scopes, in Scopes) records what the client asked for here (SSP2's
	// requested scopes), which a realtime channel resolves again later.
	// Keys and values are checked as text (V-6); any number of keys, an
	// empty list included. Nothing is read with them.
	RecordScopes ScopeFilter `json:"-"`
	// SkipSnapshot, when set, is asked with the pin before the first page
	// of a fresh bootstrap of the subscription is read (PULL-14): true
	// means the caller serves that snapshot itself — a stored image of
	// the same table, scopes and pin, say — and no row of it is read: the
	// result is the fresh bootstrap's with Skipped set, no Rows and no
	// BootstrapToken (PullTo's sink gets Start and End, no Page). It is
	// called at most once per subscription and pull, from a goroutine of
	// the pull's own (possibly while the sink handles an earlier
	// subscription), and not for a resumed bootstrap, a window or a
	// reset. An error it returns stops the pull: PullTo returns it as it
	// is, nothing is written.
	SkipSnapshot func(ctx context.Context, asOf int64) (bool, error) `json:"-"`
}

// PullStatus says how a subscription was served.
type PullStatus string

// The subscription outcomes of a pull.
const (
	// PullActive: the subscription was served; its rows or commits are in
	// the result.
	PullActive PullStatus = "active"
	// PullReset: the subscription cannot continue from where the client
	// is (Reason says why). The client discards the subscription's rows
	// and bootstraps it again: NextCursor is PullBootstrap (PULL-2).
	PullReset PullStatus = "reset"
)

// PullResponse is the outcome of a pull.
type PullResponse struct {
	// MaxCommitSeq is the partition's head as this pull read it: every
	// subscription was served through it and no further (PULL-7).
	MaxCommitSeq int64 `json:"maxCommitSeq"`
	// Epoch is the partition's log epoch from the registry (REG-1): a
	// client that sees it change must bootstrap every subscription again.
	Epoch string `json:"epoch"`
	// Subscriptions hold one result per requested subscription, in
	// request order.
	Subscriptions []PullResult `json:"subscriptions"`
}

// PullResult is what one subscription got. Exactly one of Rows (a
// bootstrap page) and Commits (an incremental window) may be non-empty; a
// reset carries neither.
type PullResult struct {
	// ID is the subscription's ID.
	ID string `json:"id"`
	// Status is PullActive or PullReset.
	Status PullStatus `json:"status"`
	// Reason is the code of a reset: CodeCursorExpired (the cursor or the
	// bootstrap's asOfCommitSeq is below the horizon: commits after it
	// may be pruned, PULL-2) or CodeCursorAhead (beyond the partition's head:
	// a cursor this store never issued); "" when active.
	Reason Code `json:"reason,omitempty"`
	// Bootstrap reports a bootstrap page: Rows hold current rows of the
	// scope in ascending id order. On the first page (the request's
	// cursor was PullBootstrap and it had no token) the client replaces
	// the subscription's rows with the pages it gets (PULL-3).
	Bootstrap bool `json:"bootstrap"`
	// Fresh reports a bootstrap this pull pinned: its first page is in
	// this result (Store.Pull) or the first Page of the subscription
	// (Store.PullTo), and the client replaces the subscription's rows
	// with the pages it gets (PULL-3). Without RestartBootstraps it is
	// true exactly when the request's cursor was PullBootstrap and it had
	// no token; with it, also when the engine restarted the bootstrap
	// (PULL-11). false for a resumed bootstrap, a window or a reset.
	Fresh bool `json:"fresh"`
	// AsOfCommitSeq is the commit seq a bootstrap is pinned at (its first
	// page read it as the partition's head); 0 when not bootstrapping.
	AsOfCommitSeq int64 `json:"asOfCommitSeq"`
	// Skipped reports a fresh bootstrap whose snapshot the subscription's
	// SkipSnapshot took over: no page was read (PULL-14).
	Skipped bool `json:"skipped,omitempty"`
	// Rows is one bootstrap page, at most the subscription's LimitRows
	// (Store.Pull; Store.PullTo hands pages to PullSink.Page instead).
	Rows []Row `json:"rows,omitempty"`
	// BootstrapToken is non-empty while the bootstrap has more pages:
	// send it back (with the same table and scopes) for the next one
	// (PULL-4); it resumes after the last page this pull served.
	// Opaque text of at most 512 bytes (base64url, so it embeds in JSON
	// or a URL as it is).
	BootstrapToken string `json:"bootstrapToken,omitempty"`
	// Commits are the whole commits after the cursor that touched the
	// scope, oldest first, each with only its matching changes (WIN-2).
	// Reading stops once their changes reach LimitChanges; the commit
	// that reaches it comes whole, never split (PULL-6). (Store.PullTo
	// hands them to PullSink.Commits instead.)
	Commits []Commit `json:"commits,omitempty"`
	// NextCursor is the cursor to send next: after a bootstrap page,
	// AsOfCommitSeq (send BootstrapToken too while it is non-empty); after
	// an incremental window, where the next window starts (PULL-7); after
	// a reset, PullBootstrap.
	NextCursor int64 `json:"nextCursor"`
}

// PullSink receives a pull that Store.PullTo streams (PULL-10). For each
// subscription, in request order, PullTo calls Start, then
//
//   - a bootstrap: Page for each page as it is read — at least one (an
//     empty scope is one empty page), then more while rows remain and
//     Page returns true; none for a snapshot SkipSnapshot took over
//     (PULL-14);
//   - an incremental pull: Commits once, with the window (maybe empty);
//   - a reset: nothing;
//
// then End. The calls are made one at a time, from the goroutine that
// called PullTo, with its context. A method that returns an error stops
// the pull: PullTo returns the error as it is, writes no client record
// and does not touch the registry. The sink may keep what it is given;
// PullTo keeps nothing it handed over.
type PullSink interface {
	// Start opens a subscription: r is its result but for Rows, Commits
	// and BootstrapToken, which come with Page, Commits and End.
	Start(ctx context.Context, r PullResult) error
	// Page delivers one page of a bootstrap. It returns whether to go on
	// with the next page in this pull — the host's page budget (SSP2:
	// maxSnapshotPages for rows segments, every page for a SQLite image);
	// ignored when p.More is false. When it returns false while rows
	// remain, End carries the token that resumes after this page.
	Page(ctx context.Context, p PullPage) (more bool, err error)
	// Commits delivers the window of an incremental pull (PullResult's
	// Commits).
	Commits(ctx context.Context, commits []Commit) error
	// End closes the subscription: r is its whole result — NextCursor and
	// BootstrapToken included — but for Rows and Commits, which went to
	// Page and Commits.
	End(ctx context.Context, r PullResult) error
}

// PullPage is one page of a bootstrap, as PullSink.Page receives it.
type PullPage struct {
	// Rows are the scope's current rows after AfterRowID, ascending
	// bytewise by id, at most the subscription's LimitRows (PULL-3). Only
	// the first page of a subscription in a pull may be empty.
	Rows []Row
	// AfterRowID is where the page starts: "" on the first page of a
	// Fresh bootstrap, else the id of the last row of the page before it
	// (in this pull, or in the pull whose token resumed it).
	AfterRowID string
	// More reports rows after this page. At LimitRows = MaxLimit a full
	// page reports More without knowing: when no row follows, the page
	// read after it in this pull is empty and not delivered (End then
	// carries no token), or, when the sink stopped there, the next pull's
	// first page is empty.
	More bool
}
