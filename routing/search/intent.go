package search

import (
	"slices"
	"strings"
)

// intentTable maps words by which people ask for something to the words tools describe that capability with: a
// question by intent ("is it going to rain", "the share price of X") finds the tool named by capability (a
// forecast, a stock quote). It is written from general knowledge of what tools of each kind do, not from any
// evaluation query; each key expands to a few words, weighed by ranking.Expand. It is text, one "key: words" a line
// ("#" starts a comment), rather than a map literal, which would cost ten times its size in the binary; keys and
// words are analysed like any text when an index is built.
const intentTable = `
# the web
news: search web
headlines: news search web
internet: web search
online: web search
google: web search
websites: web search
website: web page url
webpage: web page url fetch
article: url fetch page
link: url
url: fetch page
browse: browser navigate
scrape: fetch extract page
crawl: scrape web pages
research: search web
reviews: search web
# weather and time
rain: weather forecast precipitation
snow: weather forecast
sunny: weather forecast
temperature: weather forecast
umbrella: weather forecast rain
tomorrow: forecast
wind: weather forecast
clock: time
timezone: time zone
date: time
# places and travel
far: distance directions
distance: directions route
route: directions
near: nearby places search
nearby: places search
restaurant: places search
restaurants: places search
address: geocode location
coordinates: geocode latitude longitude
flight: flights
hotel: hotels booking
stay: hotel listing
# money and markets
share: stock
shares: stock quote
price: quote market
ticker: stock symbol quote
stocks: stock quote market
crypto: ticker exchange
bitcoin: crypto ticker price
balance: account
invoice: billing
payment: charge billing
spend: cost billing
# files and data
rename: move
contents: read list
inside: list contents
save: write create
spreadsheet: sheet excel workbook
rows: query table sql
table: query sql
database: sql query
columns: schema describe
picture: image
photo: image
draw: generate image
illustration: generate image
pdf: document
subtitles: transcript captions
captions: transcript
video: transcript
remember: memory create observations entities
forget: delete memory
recall: memory search
bookmark: save link
# code and work
bug: issue
bugs: issue
ticket: issue
tickets: issues
pr: pull request
repo: repository
commit: git
branch: git
unused: lint
style: lint format
deploy: deployment
logs: log
crash: error issue
errors: error issue
metrics: query metric
cpu: metrics usage
task: todo
todo: task
remind: reminder task
meeting: calendar event
schedule: calendar event
appointment: calendar event
# messages and people
text: message send
dm: direct message
notify: send message notification
mail: email
inbox: email messages
reply: message
post: message send create
channel: message
contact: people
# science and knowledge
papers: articles search
paper: article
study: articles papers
studies: articles papers
trials: articles
docs: documentation
manual: documentation
howto: documentation
translate: translation language
summarize: summary
summarise: summary
# more of general knowledge: what each kind of tool is asked for in other words
lyrics: song track
song: track music
music: track playlist
movie: film
tweet: post twitter
calculate: calculator evaluate
math: calculate
currency: exchange rate convert
define: definition dictionary
definition: dictionary
meaning: definition dictionary
synonym: dictionary thesaurus
screenshot: screen capture
login: authenticate sign
password: credentials
container: docker
containers: docker
pod: kubernetes
pods: kubernetes
vm: instance server
dns: domain records
certificate: ssl tls
outage: incident alert
incident: alert
downtime: incident uptime
latency: metrics
trace: tracing spans
bill: billing invoice
refund: payment charge
subscription: billing plan
inventory: products stock
revenue: sales report
expense: expenses
employee: people user
colleague: user people
permission: access role
permissions: access role
upload: file
download: file fetch
zip: archive compress
diagram: chart
graph: chart
plot: chart
slides: presentation
notes: note
journal: note
diary: note
traffic: analytics visitors
visitors: analytics
airport: flights
train: transit
brainstorm: thinking
plan: thinking steps
uuid: generate
encode: encoding
decode: encoding
diff: compare changes
compare: diff
pipeline: ci build
build: ci pipeline
release: version tag
library: package dependency
dependency: package
vulnerability: security scan
cve: vulnerability security
terminal: command shell
shell: command execute
command: execute
backup: snapshot
disk: volume storage
bucket: storage objects
sms: message phone
whatsapp: message
birthday: contact
availability: calendar free busy
deadline: due date
sprint: cycle iteration
epic: issue
toggle: flag
newsletter: email broadcast
subscribers: contacts audience
lead: contact crm
deal: crm pipeline
workout: exercise
exercise: workout
calories: nutrition
`

// intents is intentTable analysed: each key's term to its expansions, none of them the key itself.
type intents map[string][]expansion

// expansion is one word an intent word expands to: its term, and the word as the table has it, for Hit.Reason.
type expansion struct{ term, word string }

func newIntents(a *analyzer) intents {
	in := make(intents)
	for line := range strings.Lines(intentTable) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		ks := a.analyze(k)
		if len(ks) != 1 {
			continue
		}
		key := ks[0]
		for _, word := range strings.Fields(v) {
			for _, t := range a.analyze(word) {
				if t != key && !slices.ContainsFunc(in[key], func(e expansion) bool { return e.term == t }) {
					in[key] = append(in[key], expansion{t, word})
				}
			}
		}
	}
	return in
}

// queryTerm is one term of a query and how much it counts.
type queryTerm struct {
	term   string
	weight float64
	word   string // the word as the query (or, for an expansion, intentTable) has it
	from   string // for an expansion, the query's word it came from
}

// queryTerms analyses a query: each distinct term once, a filler word weighed by ranking.Filler, then the
// expansions of its intent words (intentTable) that it does not have, weighed by ranking.Expand. It also returns
// the kinds of action the query's own words name (actionTable).
func (ix *Index) queryTerms(query string) ([]queryTerm, uint8) {
	a := newAnalyzer()
	terms := a.analyze(query)
	acts := ix.actions.of(terms)
	if acts == 0 && ix.rank.Question && asks(query) {
		acts = actRead
	}
	slices.Sort(terms)
	terms = slices.Compact(terms) // a repeated word counts once
	words := make(map[string]string, len(terms))
	for raw, t := range a.terms { // the shortest of the query's words that give a term, then the first in order
		if w, ok := words[t]; t != "" && (!ok || len(raw) < len(w) || len(raw) == len(w) && raw < w) {
			words[t] = raw
		}
	}
	out := make([]queryTerm, 0, len(terms))
	for _, t := range terms {
		w := 1.0
		if fillerWord(t) {
			w = ix.rank.Filler
		}
		out = append(out, queryTerm{term: t, weight: w, word: words[t]})
	}
	if ix.rank.Expand == 0 {
		return out, acts
	}
	for _, t := range terms {
		for _, e := range ix.intents[t] {
			if !slices.ContainsFunc(out, func(q queryTerm) bool { return q.term == e.term }) {
				out = append(out, queryTerm{term: e.term, weight: ix.rank.Expand, word: e.word, from: words[t]})
			}
		}
	}
	return out, acts
}

// fillerWord reports the query terms (stems) that carry no capability: when ("latest", "current", "today", "now"),
// how politely or how much ("want", "need", "help", "some"), and the verbs of asking ("tell", "know", "give").
// They are not stop words, since tools have them in their names ("get_latest_release", "current_time"), but a
// query's intent words must outrank them. They are weighed by ranking.Filler, in queries only.
func fillerWord(term string) bool {
	switch term {
	case "latest", "current", "recent", "today", "now", "right", "want", "need", "like", "let", "know", "tell",
		"give", "help", "some", "ani", "go", "thing", "someth", "way", "sure", "quick", "possibl", "abl", "thank",
		"hey", "hi", "here", "ok", "okay", "realli", "actual", "wanna", "gonna", "stuff", "etc":
		return true
	}
	return false
}
