package search

import (
	"context"
	"fmt"
)

// Request is one search: the query, the sets of conversations it looks
// in (each brought up to date first), and how many hits get snippets.
type Request struct {
	Query Query
	Sets  []Set
	// Cwd limits the hits to the conversations of this folder ("" all).
	Cwd string
	// Keep, when set, says which hits to keep (before snippets are made).
	Keep func(Hit) bool
	// Snippets is how many of the first hits get their snippets (0: none;
	// <0: all).
	Snippets int
	// Rebuild empties the index first.
	Rebuild bool
	// Progress, when set, is told how many conversations an update reads
	// before it does.
	Progress func(n int)
}

// Result is what Find found, and what its updates did.
type Result struct {
	Hits    []Hit
	Updates []Stats
	// Rebuilt says the index was found damaged and made anew.
	Rebuilt bool
}

// Find runs a search on the index in the state folder dir: it opens it
// (making it when missing, anew when damaged), updates each set, searches,
// and makes the snippets of the first hits. An index found damaged on
// the way is made anew and the search run again, once.
func Find(ctx context.Context, dir string, req Request) (Result, error) {
	ix, err := Open(dir)
	if err != nil {
		return Result{}, err
	}
	defer ix.Close()
	res, err := ix.find(ctx, req)
	if err != nil && damaged(err) {
		if err := ix.reset(); err != nil {
			return Result{}, err
		}
		res, err = ix.find(ctx, req)
		res.Rebuilt = true
	}
	return res, err
}

func (ix *Index) find(ctx context.Context, req Request) (Result, error) {
	var res Result
	if req.Rebuild {
		if err := ix.Rebuild(); err != nil {
			return res, err
		}
	}
	var kinds []string
	for _, set := range req.Sets {
		st, err := ix.Update(ctx, set, req.Progress)
		if err != nil {
			return res, fmt.Errorf("update the search index: %w", err)
		}
		res.Updates = append(res.Updates, st)
		kinds = append(kinds, set.Kind)
	}
	if len(req.Query.Terms) == 0 {
		return res, nil // an update alone
	}
	hits, err := ix.Search(req.Query, kinds, req.Cwd)
	if err != nil {
		return res, err
	}
	if req.Keep != nil {
		kept := hits[:0]
		for _, h := range hits {
			if req.Keep(h) {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	n := req.Snippets
	if n < 0 || n > len(hits) {
		n = len(hits)
	}
	for i := range hits[:n] {
		if err := ix.Snippets(&hits[i], req.Query); err != nil {
			return res, err
		}
	}
	res.Hits = hits
	return res, nil
}

// Snip makes the snippets of hits (a search's, on the index in the state
// folder dir), as Find does for its first: for a page of hits after the
// first. A conversation indexed again since the search shows its lines
// as they are now; one gone from the index gets none.
func Snip(dir string, hits []Hit, q Query) error {
	ix, err := Open(dir)
	if err != nil {
		return err
	}
	defer ix.Close()
	for i := range hits {
		if err := ix.Snippets(&hits[i], q); err != nil {
			return err
		}
	}
	return nil
}
