v=spf1 include:${zone} ~all
