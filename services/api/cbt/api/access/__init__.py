"""Who may call the api and how much: tokens, reads behind a token, the per-client rate limit."""
