//go:build tools

package tools

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
	_ "github.com/prometheus/alertmanager/cmd/amtool"
)
