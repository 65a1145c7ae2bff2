"""The adapters: one module (or package) per agent host, holding everything mailslot
knows about it. They are found by name by the registry, :mod:`mailslot.host_registry`,
and loaded only when their host is asked for; this package imports none of them."""

PROVIDER_ENV = ("OPENAI_*", "ANTHROPIC_*", "GEMINI_*", "GOOGLE_*", "OPENROUTER_*",
                "GROQ_*", "MISTRAL_*", "DEEPSEEK_*", "XAI_*")
"""The model providers' own variables (keys, endpoints), read by a host that speaks to
whichever provider it is configured for (its ``program_env``)."""
