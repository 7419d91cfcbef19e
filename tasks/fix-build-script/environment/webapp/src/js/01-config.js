const api = "/api";
