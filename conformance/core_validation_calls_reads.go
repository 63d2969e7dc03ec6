package conformance

import (
	"context"
	"math"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// The catalog of bad calls, continued (see core_validation_calls.go):
// ReadCommits (LOG) and AckClientCursor (CR-6). Each ack that sync let
// through would write: its cursor is at most the head and its time is
// later than the seeded record's.

// vdAckAt is the time of the catalog's acks.
const vdAckAt = int64(1) << 40

// vdCallsReadsV1: the calls with a bad partition p (named n); part of
// vdCallsV1.
func vdCallsReadsV1(p, n string) []vdCall {
	inv := driver.CodeInvalidArgument
	return []vdCall{
		vdS("ReadCommits"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.ReadCommits(ctx, p, driver.CommitsQuery{ThroughSeq: vdThrough, LimitChanges: 10})
			return err
		}),
		vdS("AckClientCursor"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.AckClientCursor(ctx, p, vdClient, vdActor, 0, vdAckAt)
			return err
		}),
	}
}

// vdCallsReadsV2: the calls with a bad id (named n); part of vdCallsV2.
func vdCallsReadsV2(id, n string) []vdCall {
	inv := driver.CodeInvalidArgument
	return []vdCall{
		vdS("AckClientCursor client id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.AckClientCursor(ctx, vdP, id, vdActor, 0, vdAckAt)
			return err
		}),
		vdS("AckClientCursor actor id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.AckClientCursor(ctx, vdP, vdClient, id, 0, vdAckAt)
			return err
		}),
	}
}

// vdCallsReadsV5: limits n outside 1…10,000, negative and inverted
// sequences; part of vdCallsV5.
func vdCallsReadsV5(n int) []vdCall {
	inv := driver.CodeInvalidArgument
	out := []vdCall{
		vdS("ReadCommits limitChanges", driver.CodeInvalidLimit, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.ReadCommits(ctx, vdP, driver.CommitsQuery{ThroughSeq: vdThrough, LimitChanges: n})
			return err
		}),
	}
	if n != 0 { // once
		return out
	}
	commits := func(name string, after, through int64) vdCall {
		return vdS("ReadCommits "+name, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.ReadCommits(ctx, vdP, driver.CommitsQuery{AfterSeq: after, ThroughSeq: through, LimitChanges: 10})
			return err
		})
	}
	acked := func(name string, cursor int64) vdCall {
		return vdS("AckClientCursor "+name, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.AckClientCursor(ctx, vdP, vdClient, vdActor, cursor, vdAckAt)
			return err
		})
	}
	return append(out,
		commits("afterSeq -1", -1, 5), commits("throughSeq below afterSeq", 3, 2), commits("throughSeq negative", 0, -1),
		acked("cursor -1", -1), acked("cursor MinInt64", math.MinInt64), acked("cursor beyond the head", math.MaxInt64),
	)
}

// vdCallsReadsV7: the reserved server-command prefix as the acked client
// id; part of vdCallsV7.
func vdCallsReadsV7() []vdCall {
	return []vdCall{
		vdS("AckClientCursor", driver.CodeInvalidClientID, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.AckClientCursor(ctx, vdP, vdRemoteID, vdActor, 0, vdAckAt)
			return err
		}),
	}
}
