package model

import "strings"

// stopMatcher releases generated text for streaming while holding back any
// tail that could still grow into a stop string, so a stop string split over
// several tokens is never partly emitted.
type stopMatcher struct {
	stops   []string
	pending string
}

// push adds text; it returns what can be released now and, when a stop
// string has appeared, found=true with the text before it as released.
func (s *stopMatcher) push(text string) (release string, found bool) {
	s.pending += text
	cut := -1
	for _, st := range s.stops {
		if i := strings.Index(s.pending, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		release, s.pending = s.pending[:cut], ""
		return release, true
	}
	hold := 0
	for _, st := range s.stops {
		for k := min(len(st)-1, len(s.pending)); k > hold; k-- {
			if strings.HasSuffix(s.pending, st[:k]) {
				hold = k
				break
			}
		}
	}
	release = s.pending[:len(s.pending)-hold]
	s.pending = s.pending[len(s.pending)-hold:]
	return release, false
}

// flush releases whatever is held back.
func (s *stopMatcher) flush() string {
	r := s.pending
	s.pending = ""
	return r
}
