package checkpoint

import "spbridge/internal/canonjson"

func canonjsonEncode(idx *index) ([]byte, error) { return canonjson.Encode(idx.value()) }
