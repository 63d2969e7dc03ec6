package server

import (
	"log/slog"
	"net/http"
)

const (
	levelDebug = slog.LevelDebug
	levelInfo  = slog.LevelInfo
	levelWarn  = slog.LevelWarn
	levelError = slog.LevelError
)

func errAttr(err error) slog.Attr { return slog.String("err", err.Error()) }

func slogPath(r *http.Request) slog.Attr { return slog.String("path", r.URL.Path) }
