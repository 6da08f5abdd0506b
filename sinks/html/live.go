package html

import (
	_ "embed"
	"html/template"
	"io"
)

var (
	//go:embed live.html.tmpl
	liveTemplate string
	//go:embed live.js
	liveJS string
)

// RenderLive writes the live dashboard's page: the report's charts and
// styles, drawn by the report's own code (report.js) from the events of
// /events as they come (live.js). It
// embeds everything it needs, as the report does, and fetches only from
// the server that served it.
func RenderLive(w io.Writer) error {
	t, err := parsePage("live", liveTemplate)
	if err != nil {
		return err
	}
	p := newPage([]byte("{}"))
	p.Connect = true
	return t.Execute(w, liveView{page: p, ReportJS: template.JS(reportJS), LiveJS: template.JS(liveJS)})
}

// liveView is what the live page's template reads.
type liveView struct {
	page
	ReportJS, LiveJS template.JS
}
