"""wais: URLs (RFC 1738 §3.9): a native WAIS (Z39.50-1988) client."""
