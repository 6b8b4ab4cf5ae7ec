CREATE TABLE orders (
    id       bigserial     PRIMARY KEY,
    customer text          NOT NULL,
    total    numeric(12,2) NOT NULL
);
