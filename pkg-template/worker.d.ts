// `condense-ctx/worker`: the worker side of createWorker(), a module with no exports. Import it
// from a worker entry of your own (or make it a bundle entry point) and pass that worker to
// createWorker({ worker }).
export {};
