// Command modelserver is the test-model-server image's stand-in for vLLM's OpenAI-compatible
// server, as Gantry runs an inference Workspace's container (presets' vLLM-style args, MODEL_NAME,
// PORT, a TCP readiness probe). It serves GET /v1/models, POST /v1/chat/completions (echoing the
// last user message, streamed with "stream": true), /health, / and /devices; another model name
// gets vLLM's 404. The model is --served-model-name, --model, $MODEL_NAME or "test-model"; the port
// --port, $PORT or 8000. MODEL_SERVER_FAIL_AFTER_START=1 exits 1 at once. Called as ray,
// multi-node-serving.sh or python3 it stands in for KAITO's multi-node group (ray.go).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/hack/internal/gpuinfo"
)

// Defaults: Gantry's default inference port (v1alpha1.DefaultInferencePort) and model name.
const (
	DefaultPort  = 8000
	DefaultModel = "test-model"
)

// Options are what the arguments and environment say.
type Options struct {
	Model string
	Host  string
	Port  int
}

// ParseArgs reads vLLM-style arguments (--flag X or --flag=X) over the environment (getenv):
// see the package comment. Unknown arguments are ignored; an unusable port (such as an
// unexpanded "$(PORT)") falls back to PORT, then DefaultPort.
func ParseArgs(args []string, getenv func(string) string) Options {
	var served, model, port string
	o := Options{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		var dst *string
		switch k {
		case "served-model-name":
			dst = &served
		case "model":
			dst = &model
		case "port":
			dst = &port
		case "host":
			dst = &o.Host
		default:
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				continue
			}
			i++
			v = args[i]
		}
		*dst = v
	}
	for _, m := range []string{served, model, getenv("MODEL_NAME"), DefaultModel} {
		if m != "" {
			o.Model = m
			break
		}
	}
	for _, p := range []string{port, getenv("PORT")} {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
			o.Port = n
			break
		} else if p != "" {
			log.Printf("port %q is not a port number, ignored", p)
		}
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	return o
}

func main() {
	log.SetFlags(0)
	switch filepath.Base(os.Args[0]) {
	case "ray":
		os.Exit(rayMain(os.Args[1:]))
	case "multi-node-serving.sh":
		os.Exit(multiNodeServingMain(os.Args[1:]))
	case "python3", "python":
		os.Exit(python3Main(os.Args[1:]))
	}
	serve(os.Args[1:])
}

// serve is the model server on the arguments args (ParseArgs); it returns once shut down.
func serve(args []string) {
	log.SetPrefix("model-server: ")
	if os.Getenv("MODEL_SERVER_FAIL_AFTER_START") == "1" {
		msg := "failing on purpose (MODEL_SERVER_FAIL_AFTER_START=1)"
		log.Print(msg)
		if f, err := os.OpenFile("/dev/termination-log", os.O_WRONLY|os.O_TRUNC, 0); err == nil {
			fmt.Fprintln(f, "model-server: "+msg)
			f.Close()
		}
		os.Exit(1)
	}
	o := ParseArgs(args, os.Getenv)
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		log.Fatal(err)
	}
	host, _ := os.Hostname()
	log.Printf("gantry test model server %s serving model %q on %s", host, o.Model, ln.Addr())
	srv := &http.Server{Handler: Handler(o.Model, host), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case err := <-errc:
		log.Fatal(err)
	case <-ctx.Done():
	}
	log.Print("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
	}
}

// message is a chat message; content is a string or OpenAI's array of parts.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is a message's text: the string, or its text parts joined.
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts) // neither form: no text
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Handler serves the API for model on behalf of host (GET / names it).
func Handler(model, host string) http.Handler {
	var seq atomic.Int64
	created := time.Now().Unix()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "gantry test model server %s model %s\n", host, model)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	gpuinfo.Handle(mux)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
			{"id": model, "object": "model", "owned_by": "gantry", "created": created, "root": model}}})
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string    `json:"model"`
			Messages []message `json:"messages"`
			Stream   bool      `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
			return
		}
		if req.Model != "" && req.Model != model {
			apiError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
			return
		}
		if len(req.Messages) == 0 {
			apiError(w, http.StatusBadRequest, "BadRequestError", "messages: at least one message is required")
			return
		}
		reply := ""
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				reply = req.Messages[i].text()
				break
			}
		}
		prompt := 0
		for _, m := range req.Messages {
			prompt += len(strings.Fields(m.text()))
		}
		id := fmt.Sprintf("chatcmpl-gantry-%d", seq.Add(1))
		now := time.Now().Unix()
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			for _, choice := range []map[string]any{
				{"index": 0, "delta": map[string]any{"role": "assistant", "content": reply}, "finish_reason": nil},
				{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"},
			} {
				b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": now, "model": model,
					"choices": []map[string]any{choice}}) // plain maps: cannot fail
				fmt.Fprintf(w, "data: %s\n\n", b)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		completion := len(strings.Fields(reply))
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": now, "model": model,
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
		})
	})
	return mux
}

// apiError writes an OpenAI-style error (as vLLM's).
func apiError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Print(err)
	}
}
