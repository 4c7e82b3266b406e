locals {}
