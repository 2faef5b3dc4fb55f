// Package inproc serves the HTTP requests of clients in the same process
// with the server's http.Handler, without a connection: no TLS, no HTTP/2
// framing, no socket. The request keeps what the server authenticates the
// client by (its headers; its client certificate as the request's TLS
// peer), so the server authenticates and authorizes each client as itself.
//
// A Server holds the handler while it serves (Serve, Stop). Wrap gives a
// rest.Config a transport that sends its requests there; an upgrade (exec,
// attach, port-forward) goes over the network as before.
package inproc
