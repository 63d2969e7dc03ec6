package conformance

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// The catalog of bad calls, continued (see core_validation_calls.go):
// ReadCommits (LOG).

// vdCallsReadsV1: the calls with a bad partition p (named n); part of
// vdCallsV1.
func vdCallsReadsV1(p, n string) []vdCall {
	inv := driver.CodeInvalidArgument
	return []vdCall{
		vdS("ReadCommits"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.ReadCommits(ctx, p, driver.CommitsQuery{ThroughSeq: vdThrough, LimitChanges: 10})
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
	return append(out,
		commits("afterSeq -1", -1, 5), commits("throughSeq below afterSeq", 3, 2), commits("throughSeq negative", 0, -1),
	)
}
