CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint REFERENCES customers(id), total_cents integer NOT NULL);
