package state

import (
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/redis/go-redis/v9"
)
