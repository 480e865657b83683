def make_loader(dataset, batch_size, num_workers, seed, **kwargs)
    return DataLoader(dataset, batch_size)
